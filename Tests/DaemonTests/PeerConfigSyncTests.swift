import Config
import ControlProtocol
import Core
@testable import Daemon
import Engine
import Foundation
import Testing
import TestSupport

/// The daemon's reload path (`PeerConfigSync.reload`, what `tunnelctl reload`, SIGHUP and every
/// `tunnelctl peer` edit reach): the reply and the log line name each peer change — added,
/// removed, disabled, enabled, `Expires`, tier, AllowedIPs, keys — and the change is applied.
@Suite(.serialized) struct PeerConfigSyncTests {
    static let bobKey = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="
    static let bobKey2 = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
    static let carolKey = "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM="

    func config(_ dir: String, alice: String, bob: String = "", carol: Bool = false, bobKey: String = bobKey) -> String {
        """
        [Interface]
        PrivateKey = BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=
        Address = 10.99.0.1/24
        StateDirectory = \(dir)/state
        RuntimeDirectory = \(dir)/run
        PolicyDirectory = \(dir)/policies

        [Tier trial]
        Quota = 1GiB

        [Peer]
        Name = alice
        PublicKey = \(alice)
        AllowedIPs = 10.99.0.2/32

        [Peer]
        Name = bob
        PublicKey = \(bobKey)
        AllowedIPs = 10.99.0.3/32
        \(bob)
        """ + (carol ? "\n[Peer]\nName = carol\nPublicKey = \(Self.carolKey)\nAllowedIPs = 10.99.0.4/32\n" : "")
    }

    @Test func theReplyAndTheLogNameEachPeerChange() throws {
        let h = try DaemonHarness()
        let alice = h.base.alice.publicKey.base64
        try FileManager.default.createDirectory(atPath: h.dir + "/policies", withIntermediateDirectories: true)
        try "default allow\n".write(toFile: h.dir + "/policies/10-base.rules", atomically: true, encoding: .utf8)
        let path = h.dir + "/tunneld.conf"
        try config(h.dir, alice: alice).write(toFile: path, atomically: true, encoding: .utf8)
        let start = try TunnelConfig.load(path: path)
        h.engine.registry.setTierClasses(start.tiers)
        _ = h.engine.applyConfigPeers(start.peers)
        h.sessions.configPeersChanged(start.peers)
        let sync = PeerConfigSync(configPath: path, interface: start.interface, engine: h.engine, sessions: h.sessions,
                                  routes: nil, log: h.engine.log, peers: start.peers)
        func reload(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ReloadReply {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let (reply, applied) = sync.reload()
            #expect(applied, sourceLocation: sourceLocation)
            guard case .reload(let r) = reply else { throw HarnessError("not a reload reply: \(reply)") }
            return r
        }
        func logged(_ text: String) -> Bool { h.base.log.all.contains { $0.contains("reload: ") && $0.contains(text) } }

        var r = try reload(config(h.dir, alice: alice))
        #expect(r.isUnchanged && r.peerText == "no peer changed")

        r = try reload(config(h.dir, alice: alice, bob: "Disabled = true"))
        #expect(r.changes == [PeerChange(peer: "bob", kind: .disabled)] && r.changed == ["bob"])
        #expect(r.peerText == "bob disabled")
        #expect(h.sessions.restriction(of: "bob") == .disabled, "applied: bob is refused")
        #expect(logged("0 peer(s) added, 0 removed, 1 changed: bob disabled"), "\(h.base.log.all)")

        r = try reload(config(h.dir, alice: alice))
        #expect(r.changes == [PeerChange(peer: "bob", kind: .enabled)])
        #expect(h.sessions.restriction(of: "bob") == nil)

        r = try reload(config(h.dir, alice: alice, bob: "Expires = 2027-01-31"))
        #expect(r.changes == [PeerChange(peer: "bob", kind: .expires, from: nil, to: "2027-01-31T00:00:00.000Z")])
        #expect(r.peerText == "bob Expires never -> 2027-01-31T00:00:00.000Z")

        r = try reload(config(h.dir, alice: alice, bob: "Expires = 2027-01-31\nTier = trial"))
        #expect(r.changes == [PeerChange(peer: "bob", kind: .tier, from: "free", to: "trial")])
        #expect(h.engine.peer(named: "bob")?.tier == PeerTier(rawValue: "trial"), "applied")

        r = try reload(config(h.dir, alice: alice, bob: "Expires = 2027-01-31\nTier = trial\nAllowedIPs = 10.99.0.3/32, 10.99.0.9/32"))
        #expect(r.peerText == "bob AllowedIPs 10.99.0.3/32 -> 10.99.0.3/32, 10.99.0.9/32")
        #expect(h.engine.peer(named: "bob")?.allowedIPs.count == 2)

        let psk = "CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg="
        r = try reload(config(h.dir, alice: alice, bob: "Expires = 2027-01-31\nTier = trial\nAllowedIPs = 10.99.0.3/32, 10.99.0.9/32\nPresharedKey = \(psk)"))
        #expect(r.peerText == "bob preshared key set")
        #expect(!r.peerText.contains(psk) && !h.base.log.all.contains { $0.contains(psk) }, "keys are never shown")

        r = try reload(config(h.dir, alice: alice, carol: true, bobKey: Self.bobKey2))
        #expect(r.added == ["carol"] && r.removed.isEmpty)
        #expect(r.peerText == "added carol; bob public key changed (a new peer in its place)")
        #expect(h.engine.peer(named: "bob")?.publicKey.base64 == Self.bobKey2)

        r = try reload(config(h.dir, alice: alice, bobKey: Self.bobKey2))
        #expect(r.removed == ["carol"] && r.changes.isEmpty && r.peerText == "removed carol")
        #expect(logged("0 peer(s) added, 1 removed, 0 changed: removed carol"))

        // A rule file with an error: the peers still apply, the old policy stays, and the reply
        // says so (not a warning a caller could miss).
        try "alow proto tcp port 22\n".write(toFile: h.dir + "/policies/20-broken.rules", atomically: true, encoding: .utf8)
        try config(h.dir, alice: alice, carol: true, bobKey: Self.bobKey2).write(toFile: path, atomically: true, encoding: .utf8)
        let (reply, applied) = sync.reload()
        #expect(!applied)
        guard case .reload(let broken) = reply else { throw HarnessError("not a reload reply: \(reply)") }
        #expect(broken.added == ["carol"] && broken.policyGeneration == h.engine.policy.generation)
        #expect(broken.policyErrors.count == 1 && broken.policyErrors[0].contains("20-broken.rules:1"), "\(broken.policyErrors)")
        #expect(!broken.warnings.contains { $0.contains("20-broken.rules") }, "an error, not a warning")
        #expect(h.base.log.all.contains { $0.contains("reload: policy:") && $0.contains("20-broken.rules:1") })
    }
}
