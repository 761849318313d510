import Config
import Core
import Foundation
import Testing

/// `ConfigRewriter`: golden before/after files (Golden/rewrite/) for add, remove, rename and
/// disable on a file with comments, name comments, odd spacing, LF, CRLF and no final newline.
/// `TUNNELVISION_UPDATE_GOLDEN=1` rewrites the after files.
@Suite struct ConfigRewriterTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/rewrite")
    static let newKey = "KCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCk="

    enum Op: String, CaseIterable, Sendable {
        case add, removeAlice, removeBob, removeCarol, renameAlice, renameBob, disableBob
    }

    static func apply(_ op: Op, _ text: String) throws -> String {
        switch op {
        case .add:
            return ConfigRewriter.appendPeer(text, entries: [("Name", "dave"), ("PublicKey", newKey), ("AllowedIPs", "10.99.0.5/32, fd99::5/128")],
                                             comment: ["added by tunnelctl peer add"])
        case .removeAlice: return try ConfigRewriter.removePeer(text, named: "alice")
        case .removeBob: return try ConfigRewriter.removePeer(text, named: "bob")
        case .removeCarol: return try ConfigRewriter.removePeer(text, named: "carol")
        case .renameAlice: return try ConfigRewriter.renamePeer(text, from: "alice", to: "alice2")
        case .renameBob: return try ConfigRewriter.renamePeer(text, from: "bob", to: "robert")
        case .disableBob: return try ConfigRewriter.setKey(text, peer: "bob", key: "Disabled", value: "true")
        }
    }

    static let cases: [(String, Op)] = ["lf", "crlf", "nofinal"].flatMap { b in Op.allCases.map { (b, $0) } }

    static func read(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: dir.appendingPathComponent(name)), as: UTF8.self)
    }

    @Test(arguments: cases)
    func golden(base: String, op: Op) throws {
        let before = try Self.read("\(base).before.conf")
        let after = try Self.apply(op, before)
        let name = "\(base).\(op.rawValue).conf"
        if ProcessInfo.processInfo.environment["TUNNELVISION_UPDATE_GOLDEN"] == "1" {
            try Data(after.utf8).write(to: Self.dir.appendingPathComponent(name))
        }
        #expect(after == (try Self.read(name)), "\(name) differs")
        // The result parses, and every peer the edit is not about is exactly as before.
        let old = try TunnelConfig.parse(before, file: "before")
        let new = try TunnelConfig.parse(after, file: "after")
        #expect(new.interface == old.interface)
        let target: String? = switch op {
        case .add: nil
        case .removeAlice, .renameAlice: "alice"
        case .removeBob, .renameBob, .disableBob: "bob"
        case .removeCarol: "carol"
        }
        let untouchedOld = old.peers.filter { $0.name != target }
        let untouchedNew = new.peers.filter { $0.name != target && $0.name != "dave" && $0.name != "alice2" && $0.name != "robert" }
        #expect(untouchedNew == untouchedOld)
        switch op {
        case .add: #expect(new.peer(named: "dave")?.allowedIPs.count == 2)
        case .removeAlice, .removeBob, .removeCarol: #expect(new.peers.count == old.peers.count - 1 && new.peer(named: target!) == nil)
        case .renameAlice: #expect(new.peer(named: "alice2")?.publicKey == old.peer(named: "alice")?.publicKey)
        case .renameBob: #expect(new.peer(named: "robert")?.publicKey == old.peer(named: "bob")?.publicKey)
        case .disableBob: #expect(new.peer(named: "bob")?.disabled == true && old.peer(named: "bob")?.disabled == false)
        }
        // Line endings: a CRLF file stays CRLF everywhere.
        if base == "crlf" { #expect(!after.utf8.enumerated().contains { $0.element == 10 && (($0.offset == 0) || Array(after.utf8)[$0.offset - 1] != 13) }) }
    }

    @Test func disableThenEnableRestoresTheFile() throws {
        for base in ["lf", "crlf", "nofinal"] {
            let before = try Self.read("\(base).before.conf")
            let on = try ConfigRewriter.setKey(before, peer: "bob", key: "Disabled", value: "true")
            let changed = try ConfigRewriter.setKey(on, peer: "bob", key: "Disabled", value: "false")
            #expect(changed.contains("Disabled = false"))
            #expect(try ConfigRewriter.setKey(on, peer: "bob", key: "Disabled", value: nil) == before, "\(base)")
        }
    }

    @Test func valueReplacementKeepsSpacingAndComment() throws {
        let before = try Self.read("lf.before.conf")
        let after = try ConfigRewriter.setKey(before, peer: "alice", key: "AllowedIPs", value: "10.99.0.9/32")
        #expect(after.contains("AllowedIPs = 10.99.0.9/32   # alice's laptop\n"))
        let bob = try ConfigRewriter.setKey(before, peer: "bob", key: "publickey", value: Self.newKey)
        #expect(bob.contains("PublicKey =   \(Self.newKey)\n"))
    }

    @Test func unknownPeerIsAClearError() throws {
        let before = try Self.read("lf.before.conf")
        #expect(throws: ValueError("no [Peer] named 'zed' in the file", hint: "tunnelctl peer list shows the names")) {
            try ConfigRewriter.removePeer(before, named: "zed")
        }
    }

    @Test func peerNamedAfterItsKeyIsFound() throws {
        let key = "MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjM="
        let text = "[Interface]\nPrivateKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQI=\nAddress = 10.0.0.1/24\n\n[Peer]\nPublicKey = \(key)\nAllowedIPs = 10.0.0.2/32\n"
        let name = PeerName.fromKey(key)
        #expect(try TunnelConfig.parse(text, file: "t").peers.first?.name == name)
        #expect(try ConfigRewriter.removePeer(text, named: name) == "[Interface]\nPrivateKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQI=\nAddress = 10.0.0.1/24\n")
    }

    /// Every truncation of the golden inputs (by Unicode scalar): every edit of every peer the
    /// truncated text names returns without trapping, appending keeps the old text as a prefix, and
    /// setting then clearing a new key gives the text back.
    @Test func everyTruncation() throws {
        for base in ["lf", "crlf"] {
            let full = Array(try Self.read("\(base).before.conf").unicodeScalars)
            for n in 0...full.count {
                var t = ""
                t.unicodeScalars.append(contentsOf: full[0..<n])
                let appended = ConfigRewriter.appendPeer(t, entries: [("Name", "z")])
                #expect(Array(appended.utf8).starts(with: t.utf8), "append, \(base) cut at \(n)")
                for name in ["alice", "bob", "carol"] {
                    guard let removed = try? ConfigRewriter.removePeer(t, named: name) else { continue }
                    #expect(removed.count < t.count)
                    let on = try ConfigRewriter.setKey(t, peer: name, key: "Colour", value: "red")
                    #expect(try ConfigRewriter.setKey(on, peer: name, key: "Colour", value: nil) == t, "\(base) cut at \(n), \(name)")
                }
            }
        }
    }

    @Test func appendToEmptyAndToFileEndingInBlank() {
        #expect(ConfigRewriter.appendPeer("", entries: [("Name", "a")]) == "[Peer]\nName = a\n")
        #expect(ConfigRewriter.appendPeer("[Interface]\r\n\r\n", entries: [("Name", "a")]) == "[Interface]\r\n\r\n[Peer]\r\nName = a\r\n")
    }
}
