import ControlProtocol
import Daemon
import Core
import Foundation
import Synchronization
import Testing

@testable import tunnelctl

/// What `tunnelctl reload` and the `peer` edits print of tunneld's reload reply (golden): each
/// kind of peer change named, never "no peer changed" for a reload that changed one. A stand-in
/// tunneld on the fixture's control socket answers the replies tunneld builds
/// (`PeerConfigSyncTests` checks the daemon builds them).
@Suite(.serialized) struct ReloadReplyCommandTests {
    /// One reply per kind of change, in the golden's order.
    static let replies: [(String, ReloadReply)] = [
        ("nothing", ReloadReply(policyGeneration: 2)),
        ("added", ReloadReply(added: ["carol", "dave"], policyGeneration: 3)),
        ("removed", ReloadReply(removed: ["carol"], policyGeneration: 4)),
        ("disabled", ReloadReply(changes: [PeerChange(peer: "bob", kind: .disabled)], policyGeneration: 5)),
        ("enabled", ReloadReply(changes: [PeerChange(peer: "bob", kind: .enabled)], policyGeneration: 6)),
        ("expires", ReloadReply(changes: [PeerChange(peer: "bob", kind: .expires, from: nil, to: "2027-01-31T00:00:00.000Z"),
                                          PeerChange(peer: "alice", kind: .expires, from: "2027-01-31T00:00:00.000Z", to: nil)],
                                policyGeneration: 7)),
        ("tier", ReloadReply(changes: [PeerChange(peer: "alice", kind: .tier, from: "free", to: "trial")], policyGeneration: 8)),
        ("tier-under-override", ReloadReply(changes: [PeerChange(peer: "bob", kind: .tier, from: "premium", to: "trial",
                                                                 note: "the override free set by tunnelctl peer tier stays in force")],
                                            policyGeneration: 8)),
        ("allowed-ips", ReloadReply(changes: [PeerChange(peer: "alice", kind: .allowedIPs, from: "10.99.0.2/32",
                                                         to: "10.99.0.2/32, 10.99.0.9/32")], policyGeneration: 9)),
        ("public-key", ReloadReply(changes: [PeerChange(peer: "bob", kind: .publicKey)], policyGeneration: 10)),
        ("preshared-key", ReloadReply(changes: [PeerChange(peer: "bob", kind: .presharedKey, from: nil, to: "set"),
                                                PeerChange(peer: "alice", kind: .presharedKey, from: "set", to: "set"),
                                                PeerChange(peer: "carol", kind: .presharedKey, from: "set", to: nil)],
                                      policyGeneration: 11)),
        ("name", ReloadReply(changes: [PeerChange(peer: "ann", kind: .name, from: "alice", to: "ann")], policyGeneration: 12)),
        ("keepalive, endpoint, limits", ReloadReply(changes: [
            PeerChange(peer: "bob", kind: .keepalive, from: nil, to: "25"),
            PeerChange(peer: "bob", kind: .endpoint, from: "192.0.2.7:51820", to: "192.0.2.8:51820"),
            PeerChange(peer: "bob", kind: .limits)], policyGeneration: 13)),
        ("several, with a warning", ReloadReply(added: ["erin"], removed: ["dave"],
                                                changes: [PeerChange(peer: "bob", kind: .disabled),
                                                          PeerChange(peer: "alice", kind: .tier, from: "premium", to: "free")],
                                                warnings: ["tunneld.conf:4: DNS: is a client setting"], policyGeneration: 14)),
        ("an older tunneld (names only)", ReloadReply(changed: ["alice"], policyGeneration: 15)),
    ]

    final class Queue: Sendable {
        let next = Mutex<[ReloadReply]>([])
        func pop() -> ReloadReply? { next.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
    }

    @Test func eachKindOfPeerChangeIsNamed() throws {
        let f = try SessionCommandTests.Fixture()
        defer { f.remove() }
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let queue = Queue()
        queue.next.withLock { $0 = Self.replies.map(\.1) }
        let server = try ControlServer(path: f.dir + "/run/control.sock") { request, _ in
            guard case .reload = request, let r = queue.pop() else { return .failure(.failed, "not in this test") }
            return .reload(r)
        }
        defer { server.stop() }
        var golden = ""
        for (what, _) in Self.replies {
            let r = f.run(["reload"])
            #expect(r.code == .ok && r.err.isEmpty, "\(what): \(r.err)")
            golden += "# \(what)\n\(r.out)"
        }
        try HistoryFixture.expectGolden(golden, "reload-peer-changes.txt")
    }

    /// The reported case: `peer disable bob` while tunneld runs says that bob was disabled.
    @Test func peerDisableSaysWhoWasDisabled() throws {
        let f = try SessionCommandTests.Fixture()
        defer { f.remove() }
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let server = try ControlServer(path: f.dir + "/run/control.sock") { request, _ in
            guard case .reload = request else { return .failure(.failed, "not in this test") }
            return .reload(ReloadReply(changes: [PeerChange(peer: "bob", kind: .disabled)], policyGeneration: 3))
        }
        defer { server.stop() }
        let r = f.run(["peer", "disable", "bob"])
        #expect(r.code == .ok, "\(r.err)")
        #expect((r.out + r.err).contains("tunneld reloaded: bob disabled; policy generation 3"), "\(r)")
        #expect(!(r.out + r.err).contains("no peer changed"))
    }

    /// A reload whose rule files were refused kept the old policy: `reload` says so and fails,
    /// though the peer changes it also reports did apply.
    @Test func aRefusedPolicyMakesReloadFail() throws {
        let f = try SessionCommandTests.Fixture()
        defer { f.remove() }
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let error = "/etc/tunnelvision/policies/30-x.rules:2:1: unknown word 'alow'"
        let server = try ControlServer(path: f.dir + "/run/control.sock") { request, _ in
            guard case .reload = request else { return .failure(.failed, "not in this test") }
            return .reload(ReloadReply(added: ["carol"], policyGeneration: 4, policyErrors: [error]))
        }
        defer { server.stop() }
        for args in [["reload"], ["peer", "disable", "bob"]] {
            let r = f.run(args)
            #expect(r.code != .ok, "\(args): \(r)")
            #expect((r.out + r.err).contains("tunneld applied the peers but refused the rule files: added carol; policy generation 4"), "\(args): \(r)")
            #expect(!(r.out + r.err).contains("tunneld reloaded"), "\(args): \(r)")
            #expect(r.err.contains("kept the running policy (generation 4)") && r.err.contains(error), "\(args): \(r)")
        }
    }
}
