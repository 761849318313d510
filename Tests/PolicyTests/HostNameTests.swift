import Core
import Foundation
import Packet
import Testing

@testable import Policy

/// A reader over in-memory files.
func lists(_ files: [String: String]) -> HostListReader {
    HostListReader { path in
        guard let text = files[path] else { return .failure(PolicyLoadError(message: "No such file or directory")) }
        return .success(Array(text.utf8))
    }
}

@Suite struct HostNameTests {
    @Test func internationalNamesBecomePunycode() throws {
        #expect(try rule("block host bücher.de").hosts == [.exact("xn--bcher-kva.de")])
        #expect(try rule("block host *.BÜCHER.de.").hosts == [.subdomains(of: "xn--bcher-kva.de")])
        #expect(try rule("block host 例え.テスト").hosts == [.exact("xn--r8jz45g.xn--zckzah")])
        // Already punycode, upper case, trailing dot: the same pattern.
        #expect(try rule("block host XN--BCHER-KVA.DE.").hosts == [.exact("xn--bcher-kva.de")])
        #expect(firstError("block host ☃.example") == "1:12: '☃.example' is not a valid international host name (libidn2: string contains a disallowed character)")
        #expect(firstError("block host bü..cher.de")?.hasPrefix("1:12: 'bü..cher.de' is not a host name") == true)
        #expect(firstError("block host a*b.example")?.contains("is not a host pattern") == true)
        #expect(firstError("block host *.")?.contains("is not a host pattern") == true)
    }

    @Test func flowSyntaxTakesTheSameForm() throws {
        let f = try PolicyFlow(parsing: "tcp 10.99.0.2:40000 -> 192.0.2.1:443 host Bücher.DE.")
        #expect(f.host == "xn--bcher-kva.de")
        let set = PolicyParser.parse("default allow\ndefault in block\nblock host bücher.de")
        let policy = CompiledPolicy(rules: set.rules, defaultOut: set.defaultOut, defaultIn: set.defaultIn)
        var q = PolicyQuery(direction: .out, proto: .tcp, source: IPAddress("10.99.0.2")!, destination: IPAddress("192.0.2.1")!,
                            sourcePort: 40000, destinationPort: 443)
        q.host = "XN--bcher-kva.de"
        #expect(policy.evaluate(q).action == .block)
    }

    @Test func listsInBothFormats() throws {
        let files = lists([
            "/etc/tv/block.txt": """
                # a comment
                ads.example.com
                  Tracker.Example.NET.   # trailing comment
                *.doubleclick.net

                bücher.de
                """,
            "/etc/tv/hosts.txt": """
                127.0.0.1 localhost
                ::1 ip6-localhost ip6-loopback
                0.0.0.0 0.0.0.0
                0.0.0.0 a.example b.example\t c.example
                :: v6.example
                fe80::1%lo0 localhost
                ff02::2 ip6-allrouters
                """,
            "/etc/tv/bom.txt": "\u{FEFF}bom.example\r\nface.example\r\n",
        ])
        let set = PolicyParser.parse("default allow\ndefault in block\nblock host @/etc/tv/block.txt, extra.example, @/etc/tv/hosts.txt, @/etc/tv/bom.txt", hostLists: files)
        #expect(set.diagnostics.isEmpty, "\(set.diagnostics)")
        #expect(set.rules.first?.hosts == [
            .exact("ads.example.com"), .exact("tracker.example.net"), .subdomains(of: "doubleclick.net"), .exact("xn--bcher-kva.de"),
            .exact("extra.example"), .exact("a.example"), .exact("b.example"), .exact("c.example"), .exact("v6.example"),
            .exact("bom.example"), .exact("face.example"),
        ])
        #expect(set.rules.first?.text == "block host @/etc/tv/block.txt, extra.example, @/etc/tv/hosts.txt, @/etc/tv/bom.txt")
    }

    @Test func listErrorsSayFileAndLine() {
        let files = lists(["/l/bad.txt": "good.example\nnot a name\n0.0.0.0\nbad!.example\na..b\n"])
        let set = PolicyParser.parse("default allow\ndefault in block\nblock host @/l/bad.txt", hostLists: files)
        #expect(set.errors.map(\.description) == [
            "/l/bad.txt:2:5: error: one name per line (or hosts-file lines 'ADDRESS NAME'); found 'a' after 'not'",
            "/l/bad.txt:3:8: error: an address without a name; hosts-file lines are 'ADDRESS NAME [NAME…]'",
            "/l/bad.txt:4:1: error: 'bad!.example' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)",
            "/l/bad.txt:5:1: error: 'a..b' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)",
        ])
        let unreadable = PolicyParser.parse("default allow\ndefault in block\nblock host ads.example, @/nope.txt", hostLists: files)
        #expect(unreadable.errors.map(\.description) == [
            "test.rules:3:25: error: cannot read the host list /nope.txt: No such file or directory",
        ])
        #expect(PolicyParser.parse("block host @", hostLists: files).errors.first?.message.contains("'@' needs a file path") == true)
        // Many bad lines: 20 shown, the rest counted.
        let many = lists(["/l/many.txt": String(repeating: "x y\n", count: 50)])
        let m = PolicyParser.parse("default allow\ndefault in block\nblock host @/l/many.txt", hostLists: many)
        #expect(m.errors.count == 21 && m.errors.last?.description == "/l/many.txt: error: 30 more bad lines not shown (50 in all)")
        // An empty list is a warning; not UTF-8 an error.
        let empty = PolicyParser.parse("default allow\ndefault in block\nblock host @/e.txt", hostLists: lists(["/e.txt": "# nothing\n"]))
        #expect(empty.errors.isEmpty && empty.warnings.map(\.message) == ["the host list names no host; rules using it never match"])
        let binary = HostListReader { _ in .success([0xFF, 0xFE, 0x00]) }
        #expect(PolicyParser.parse("block host @/b.txt", hostLists: binary).errors.first?.message == "the host list /b.txt is not UTF-8 text")
    }

    /// Relative paths are taken from the rule file's directory; the real file reader says why it fails.
    @Test func listFilesOnDisk() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-hostlist-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "0.0.0.0 ads.example\n".write(to: dir.appendingPathComponent("block.txt"), atomically: true, encoding: .utf8)
        try "default allow\ndefault in block\nblock host @block.txt\n".write(to: dir.appendingPathComponent("50-ads.rules"), atomically: true, encoding: .utf8)
        let set = try PolicyParser.parse(directory: dir.path)
        #expect(set.errors.isEmpty, "\(set.errors)")
        #expect(set.rules.first?.hosts == [.exact("ads.example")])
        try "block host @missing.txt\n".write(to: dir.appendingPathComponent("60-more.rules"), atomically: true, encoding: .utf8)
        let missing = try PolicyParser.parse(directory: dir.path)
        #expect(missing.errors.map(\.description) == ["\(dir.path)/60-more.rules:1:12: error: cannot read the host list \(dir.path)/missing.txt: No such file or directory"])
    }

    /// A rule with a long list shadows a later rule whose names it covers (the lookup path of
    /// the shadowing check agrees with the pairwise one).
    @Test func shadowingWithLongLists() {
        let names = (0..<200).map { "n\($0).example" }.joined(separator: "\n") + "\n*.ads.example\n"
        let files = lists(["/l.txt": names])
        let set = PolicyParser.parse("default allow\ndefault in block\nblock host @/l.txt\nblock host n7.example, x.ads.example\nblock host other.example",
                                     hostLists: files)
        let shadowWarnings = set.warnings.filter { $0.message.hasPrefix("rule never decides anything") }
        #expect(shadowWarnings.map(\.location.line) == [4], "\(set.warnings)")
    }
}

@Suite struct HostBytesEvaluationTests {
    static let text = """
        default allow
        default in block
        allow host ok.ads.example
        block host *.ads.example name ads
        reject proto tcp port 25
        block host tracker.example, *.cdn.tracker.example name trackers
        allow port 443 name web
        block host late.example name late
        """

    /// `evaluate(_:host:)` with bytes equals `evaluate` with the name as a String, and
    /// `evaluate(_:anyOf:)` is the earliest rule any one name reaches.
    @Test func agreesWithStringEvaluation() {
        let set = PolicyParser.parse(Self.text)
        #expect(set.errors.isEmpty)
        let policy = CompiledPolicy(set)
        let names = ["ok.ads.example", "x.ads.example", "tracker.example", "a.cdn.tracker.example", "late.example", "LATE.example.",
                     "other.example", "ads.example"]
        let cache = AddressNameCache(capacity: 8, ttlFloor: 10)
        var rng = SplitMixP(seed: 14)
        for round in 0..<400 {
            var q = PolicyQuery(proto: rng.next() % 3 == 0 ? .udp : .tcp, source: IPAddress("10.99.0.2")!, destination: IPAddress("192.0.2.9")!,
                                sourcePort: 40000, destinationPort: [25, 443, 80][Int(rng.next() % 3)])
            let pick = names.filter { _ in rng.next() % 3 == 0 }
            for n in pick {
                q.host = n
                let viaString = policy.evaluate(q)
                let viaBytes = Array(n.utf8).withUnsafeBytes { policy.evaluate(q, host: $0) }
                #expect(viaString == viaBytes, "\(n)")
            }
            let address = IPAddress(v4: UInt32(round))
            for n in pick { Array(n.lowercased().utf8).withUnsafeBytes { cache.learn(peer: 1, address: address, name: $0, ttl: 60, now: 0) } }
            q.host = nil
            let got = policy.evaluate(q, anyOf: cache.names(peer: 1, address: address, now: 0))
            var want = policy.evaluate(q)
            for n in pick {
                q.host = n
                let v = policy.evaluate(q)
                if v.ruleIndex >= 0 && (want.ruleIndex < 0 || v.ruleIndex < want.ruleIndex) { want = v }
            }
            #expect(got == want, "names \(pick)")
        }
    }
}

struct SplitMixP {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
