import Core
import Foundation
import Store
import Testing

@testable import tunnelctl

/// Golden tests for `tunnelctl session | explain | refusals | flows | peer tier | peers` on a
/// fixture store, with the daemon not running. "Now" is fixed at 2026-11-29T10:40:00Z and the
/// time zone at UTC through TUNNELCTL_NOW / TUNNELCTL_TZ (the same values in every test, so
/// parallel tests agree). TUNNELVISION_UPDATE_GOLDEN=1 rewrites the golden files.
@Suite struct SessionCommandTests {
    static let now: Int64 = HistoryFixture.now  // 2026-03-01T12:00:00Z
    static let min: Int64 = 60_000

    /// A fresh directory with a config (4 peers) and a store holding windows, sessions,
    /// refusals and flows.
    struct Fixture {
        let dir: String
        var config: String { dir + "/tunneld.conf" }
        var store: String { dir + "/state/state.db" }

        init() throws {
            _ = HistoryFixture.setUp
            setenv("TUNNELCTL_TZ", "UTC", 1)
            dir = NSTemporaryDirectory() + "tv-session-\(getpid())-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
            let policies = PolicyCommandTests.fixture
            try """
                [Interface]
                PrivateKey = BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=
                Address = 10.99.0.1/24
                StateDirectory = \(dir)/state
                RuntimeDirectory = \(dir)/run
                PolicyDirectory = \(policies)
                FreeSession = 20m
                FreePause = 45m
                WatchdogInterval = 5s

                [Peer]
                Name = alice
                PublicKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=
                AllowedIPs = 10.99.0.2/32
                Tier = free

                [Peer]
                Name = bob
                PublicKey = AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=
                AllowedIPs = 10.99.0.3/32
                Tier = premium

                [Peer]
                Name = carol
                PublicKey = AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=
                AllowedIPs = 10.99.0.4/32

                [Peer]
                Name = dave
                PublicKey = BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ=
                AllowedIPs = 10.99.0.5/32
                Tier = premium
                """.write(toFile: config, atomically: true, encoding: .utf8)
            let s = try StateStore(path: store)
            let now = SessionCommandTests.now, m = SessionCommandTests.min
            // alice: window ended 10:15, paused until 11:00, 7 refused handshakes.
            try s.putWindow(SessionWindow(peer: "alice", allowedUntil: now - 25 * m, reconnectAt: now + 20 * m), opened: true, at: now - 45 * m)
            try s.openSession(peer: "alice", at: now - 45 * m)
            try s.closeSession(SessionClose(peer: "alice", at: now - 25 * m, reason: .freeLimit, rxBytes: 123_456, txBytes: 654_321))
            try s.recordRefusal(.session(peer: "alice", windowEnd: now - 25 * m, at: now - 24 * m, count: 6))
            try s.recordRefusal(.session(peer: "alice", windowEnd: now - 25 * m, at: now - 30_000))
            // carol: inside her window (6m12s left), session open.
            try s.putWindow(SessionWindow(peer: "carol", allowedUntil: now + 6 * m + 12_000, reconnectAt: now + 51 * m + 12_000))
            try s.openSession(peer: "carol", at: now - 13 * m - 48_000)
            // dave: premium in the config, free by override, no window yet.
            try s.setTier(peer: "dave", tier: .free, at: now - 60 * m)
            // Flows: two blocked attempts of alice at ssh on a private address, one live web flow of carol.
            let a = IPAddress(v4: 0x0A63_0002), lan = IPAddress(v4: 0xC0A8_0105), web = IPAddress(v4: 0xCB00_7107)
            // The rows keep the decision as taken (generation 1, alice then free).
            let private_ = DecidedRule(generation: 1, place: "10-base.rules:6", name: "private", reason: "private networks are off-limits",
                                       tier: "free")
            // The second attempt went by the DNS name alice looked up: the coalesced row keeps it.
            for (id, port, at, host) in [(Int64(1), UInt16(40000), now - 35 * m, String?.none), (2, 40001, now - 33 * m, "nas.home.arpa")] {
                try s.insertFlow(FlowOpen(id: id, proto: 6, src: a, srcPort: port, dst: lan, dstPort: 22, peer: "alice", host: host,
                                          at: at, verdict: .block, decision: private_))
                try s.closeFlow(FlowClose(id: id, at: at + 60_000, counters: FlowCounters(bytesOut: 180, packetsOut: 3), reason: "idle"))
                try s.recordRefusal(.flow(peer: "alice", decision: private_, proto: 6, dst: lan, dstPort: 22, at: at, host: host))
            }
            try s.insertFlow(FlowOpen(id: 3, proto: 6, src: IPAddress(v4: 0x0A63_0004), srcPort: 50000, dst: web, dstPort: 443,
                                      peer: "carol", at: now - 10 * m, verdict: .allow,
                                      decision: DecidedRule(generation: 1, place: "20-web.rules:4", name: "web", reason: "web", tier: "free")))
            try s.updateFlow(FlowUpdate(id: 3, lastSeen: now - 5_000,
                                        counters: FlowCounters(bytesOut: 12_000, bytesIn: 480_000, packetsOut: 150, packetsIn: 340)))
        }

        func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
            let console = Console(capturing: true)
            let code = Tunnelctl.run(argv + ["--config", config], console: console)
            func clean(_ s: String) -> String {
                s.replacingOccurrences(of: PolicyCommandTests.fixture, with: "DIR").replacingOccurrences(of: dir, with: "TMP")
            }
            return (code, clean(console.out), clean(console.err))
        }

        func remove() { try? FileManager.default.removeItem(atPath: dir) }
    }

    func expectGolden(_ text: String, _ name: String) throws {
        try PolicyCommandTests().expectGolden(text, name)
    }

    @Test func sessionAllPeersAndOne() throws {
        let f = try Fixture()
        defer { f.remove() }
        let all = f.run(["session"])
        #expect(all.code == .ok)
        #expect(all.err.contains("tunneld is not running"))
        try expectGolden(all.out, "session-all.txt")
        let alice = f.run(["session", "alice"])
        #expect(alice.out == "alice (free): paused, can reconnect in 20m00s (at 12:20:00 UTC)\n")
        let carol = f.run(["session", "carol"])
        #expect(carol.out == "carol (free): disconnected, 6m12s left in its window (until 12:06:12 UTC), then paused until 12:51:12 UTC\n")
        let json = f.run(["session", "--json"])
        #expect(json.code == .ok)
        try expectGolden(json.out, "session-all.json")
        try expectGolden(f.run(["session", "carol", "--json"]).out, "session-carol.json")
        let nobody = f.run(["session", "zed"])
        #expect(nobody.code == .failure && nobody.err.contains("no peer named 'zed'"))
    }

    @Test func explainPeer() throws {
        let f = try Fixture()
        defer { f.remove() }
        let alice = f.run(["explain", "alice"])
        #expect(alice.code == .ok)
        try expectGolden(alice.out, "explain-alice.txt")
        let json = f.run(["explain", "alice", "--json"])
        #expect(json.code == .ok)
        try expectGolden(json.out, "explain-alice.json")
        let carol = f.run(["explain", "carol"])
        #expect(carol.code == .failure)
        try expectGolden(carol.out, "explain-carol.txt")
        #expect(f.run(["explain", "bob"]).out.hasPrefix("bob: not refused\nbob (premium): disconnected, unlimited"))
    }

    @Test func explainFlow() throws {
        let f = try Fixture()
        defer { f.remove() }
        let blocked = f.run(["explain", "tcp 10.99.0.2:40000 -> 192.168.1.5:22"])
        #expect(blocked.code == .failure)
        try expectGolden(blocked.out, "explain-flow-blocked.txt")
        try expectGolden(f.run(["explain", "tcp", "10.99.0.2:40000", "->", "192.168.1.5:22", "--json"]).out, "explain-flow-blocked.json")
        let web = f.run(["explain", "tcp 10.99.0.4:50000 -> 203.0.113.7:443"])
        #expect(web.code == .ok)
        try expectGolden(web.out, "explain-flow-web.txt")
        let bad = f.run(["explain", "tcp 10.99.0.2 -> "])
        #expect(bad.code == .usage)
    }

    @Test func refusalsAndFlows() throws {
        let f = try Fixture()
        defer { f.remove() }
        try expectGolden(f.run(["refusals"]).out, "refusals-all.txt")
        try expectGolden(f.run(["refusals", "--json"]).out, "refusals-all.json")
        let recent = f.run(["refusals", "--since", "5m", "--peer", "alice"])
        #expect(recent.out.split(separator: "\n").count == 2)  // header + the session row (last attempt 30 s ago)
        #expect(f.run(["refusals", "--peer", "bob"]).out == "no refusals of bob\n")
        #expect(f.run(["refusals", "--since", "1x"]).code == .usage)
        // --since takes dates as in audit list and timeline (PAPERCUTS): 11:30 UTC keeps alice's last attempt only.
        #expect(f.run(["refusals", "--since", "2026-03-01T11:30Z", "--peer", "alice"]).out.split(separator: "\n").count == 2)
        #expect(f.run(["flows", "--since", "2026-03-02"]).out == "no flows since 2026-03-02 00:00:00 UTC\n")
        try expectGolden(f.run(["flows"]).out, "flows-all.txt")
        try expectGolden(f.run(["flows", "--blocked", "--json"]).out, "flows-blocked.json")
        #expect(f.run(["flows", "--peer", "carol", "--blocked"]).out == "no blocked flows of carol\n")
    }

    @Test func peerTierAndPeersWithoutDaemon() throws {
        let f = try Fixture()
        defer { f.remove() }
        let before = f.run(["peers"])
        #expect(before.code == .ok && before.err.contains("tunneld is not running"))
        try expectGolden(before.out, "session-peers-store.txt")
        let up = f.run(["peer", "tier", "alice", "premium"])
        #expect(up.code == .ok)
        #expect(up.out == "alice: tier premium (was free); in force at tunneld's next start\n")
        #expect(f.run(["session", "alice"]).out == "alice (premium): disconnected, unlimited\n")
        #expect(f.run(["explain", "alice"]).code == .failure)
        let down = f.run(["peer", "tier", "alice", "free"])
        #expect(down.out.hasPrefix("alice: tier free (was premium)"))
        // The window was kept: back to free, alice is in the same pause again (no fresh window).
        #expect(f.run(["session", "alice"]).out.hasPrefix("alice (free): paused, can reconnect in 20m00s"))
        #expect(f.run(["peer", "tier", "alice", "gold"]).code == .usage)
        #expect(f.run(["peer", "tier", "zed", "free"]).code == .failure)
    }

    @Test func missingAndCorruptStore() throws {
        let f = try Fixture()
        defer { f.remove() }
        try FileManager.default.removeItem(atPath: f.store)
        try? FileManager.default.removeItem(atPath: f.store + "-wal")
        try? FileManager.default.removeItem(atPath: f.store + "-shm")
        // No store yet is said as such, never as "no refusals" / "not refused".
        let noHistory = "no history yet: the store TMP/state/state.db does not exist (tunneld has not run; or StateDirectory points elsewhere)"
        // session and explain PEER answer from the store: without it, not a default answer (exit 1).
        let notKnown = "not known: the store TMP/state/state.db does not exist (tunneld has not run with this configuration yet, or StateDirectory points elsewhere)"
        let empty = f.run(["session", "alice"])
        #expect(empty.code == .failure && empty.out == notKnown + "\n")
        #expect(f.run(["refusals"]).out == noHistory + "\n")
        #expect(f.run(["flows", "--blocked"]).out == noHistory + "\n")
        let refusalsJSON = f.run(["refusals", "--json"])
        #expect(refusalsJSON.out == "[\n\n]\n" || refusalsJSON.out == "[]\n")
        #expect(refusalsJSON.err.contains(noHistory))
        let alice = f.run(["explain", "alice"])
        #expect(alice.code == .failure && alice.out == "alice: " + notKnown + "\n")
        let flow = f.run(["explain", "tcp 10.99.0.2:40000 -> 192.168.1.5:22"])
        #expect(flow.out.contains("refused  unknown: " + noHistory) && !flow.out.contains("never"))
        #expect(f.run(["timeline"]).out == noHistory + "\n")
        #expect(f.run(["audit", "list"]).out == noHistory + "\n")
        #expect(f.run(["prune", "--dry-run"]).out == "dry run: nothing to prune: " + noHistory + "\n")
        let retention = f.run(["retention", "show"])
        #expect(retention.code == .ok && retention.err.contains(noHistory) && retention.out.contains("every value is a factory value"))
        #expect(!FileManager.default.fileExists(atPath: f.store), "reading never creates the store")
        try "this is not sqlite, just text that is long enough to be a header".write(toFile: f.store, atomically: true, encoding: .utf8)
        let bad = f.run(["flows"])
        #expect(bad.code == .failure)
        #expect(bad.err.contains("not a TunnelVision store"))
    }
}
