import Capture
import ControlProtocol
import Daemon
import Core
import Foundation
import Store
import Testing

@testable import tunnelctl

/// Golden `--json` of the commands the other suites do not cover: the daemon's (`status`,
/// `peers`, `kick`, `policy show|reload`, `explain 'FLOW'` with live flows) against a stand-in
/// control socket answering canned replies, and `flows`, `explain`, `capture list`, `peer tier`,
/// `prune`, `retention set`, `audit start|stop|mark`, `peers` without the daemon.
/// `JSONSchemaTests` checks every golden against the conventions and docs/json.md.
@Suite struct JSONGoldenTests {
    typealias Fixture = SessionCommandTests.Fixture
    static let now = HistoryFixture.now
    static let min: Int64 = 60_000

    func expectGolden(_ text: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try HistoryFixture.expectGolden(text, name, sourceLocation: sourceLocation)
    }

    // MARK: the daemon's answers

    static let peers: [PeerStatus] = {
        var list = basePeers
        // alice: a 20m window with a 1 GiB quota, 312 MiB used; bob: unlimited; carol: paused after
        // her quota was used; as tunneld's `peers` reply carries them.
        list[0].limits = PeerLimits(sessionMs: 20 * min, pauseMs: 45 * min, quotaBytes: 1 << 30, rateUpBitsPerSecond: 5_000_000,
                                    rateDownBitsPerSecond: 5_000_000)
        list[0].quotaUsed = ByteUse(up: 12 << 20, down: 300 << 20)
        list[1].limits = .unlimited
        list[2].limits = PeerLimits(sessionMs: 20 * min, pauseMs: 45 * min, quotaDownBytes: 100 << 20, idleTimeoutMs: 10 * min)
        list[2].quotaUsed = ByteUse(up: 1 << 20, down: 100 << 20)
        return list
    }()

    static let basePeers = [
        PeerStatus(name: "alice", publicKey: "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", tier: .free, endpoint: "192.0.2.7:40001",
                   lastHandshakeMs: now - 30_000, rxBytes: 123_456, txBytes: 654_321, session: .connected,
                   allowedUntilMs: now + 6 * min, reconnectAtMs: now + 51 * min, allowedIPs: ["10.99.0.2/32"]),
        PeerStatus(name: "bob", publicKey: "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=", tier: .premium,
                   endpoint: "[2001:db8::7]:51820", lastHandshakeMs: now - 90_000, rxBytes: 1_000, txBytes: 2_000,
                   session: .connected, allowedIPs: ["10.99.0.3/32", "fd99::3/128"]),
        PeerStatus(name: "carol", publicKey: "AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=", tier: .free, session: .paused,
                   allowedUntilMs: now - 10 * min, reconnectAtMs: now + 35 * min, allowedIPs: ["10.99.0.4/32"]),
    ]

    static let policyShow = PolicyShowReply(
        policy: PolicySummary(generation: 4, files: ["/etc/tunnelvision/policies/10-base.rules"], ruleCount: 2,
                              loadedAtMs: now - 3_600_000),
        rules: [
            PolicyRuleStatus(file: "/etc/tunnelvision/policies/10-base.rules", line: 2, text: "block proto tcp port 25 name smtp",
                             name: "smtp", hits: 3),
            PolicyRuleStatus(file: "/etc/tunnelvision/policies/10-base.rules", line: 4, text: "allow proto udp port 53", hits: 120),
            PolicyRuleStatus(file: "/etc/tunnelvision/policies/10-base.rules", line: 1, text: "default allow", hits: 4_000),
            PolicyRuleStatus(file: "(built-in)", line: 0, text: "built-in default: block inbound", hits: 7),
        ])

    static let reloadFailed = PolicyReloadReply(
        policy: policyShow.policy,
        errors: [ControlProtocol.PolicyDiagnostic(file: "/etc/tunnelvision/policies/10-base.rules", line: 3, column: 7,
                                          message: "unknown keyword 'prot'", hint: "did you mean 'proto'?")])

    static let reloaded = PolicyReloadReply(
        policy: PolicySummary(generation: 5, files: ["/etc/tunnelvision/policies/10-base.rules"], ruleCount: 3, loadedAtMs: now),
        warnings: [ControlProtocol.PolicyDiagnostic(file: "/etc/tunnelvision/policies/10-base.rules", line: 5, column: 1,
                                            message: "rule never decides anything")])

    /// carol's web flow (id 3 in the store) and one the store has not recorded yet.
    static let liveFlows = [
        LiveFlow(id: 3, peer: "carol", proto: 6, src: "10.99.0.4", srcPort: 50000, dst: "203.0.113.7", dstPort: 443,
                 verdict: "allow", firstSeenMs: now - 10 * min, lastSeenMs: now - 1_000, bytesOut: 12_500, bytesIn: 500_000,
                 packetsOut: 160, packetsIn: 360),
        LiveFlow(id: 9, peer: "carol", proto: 6, src: "10.99.0.4", srcPort: 50000, dst: "203.0.113.7", dstPort: 443,
                 verdict: "pending", firstSeenMs: now - 2_000, lastSeenMs: now - 2_000, bytesOut: 60, bytesIn: 0,
                 packetsOut: 1, packetsIn: 0),
    ]

    /// A stand-in tunneld on the fixture's control socket.
    static func daemon(_ f: Fixture, reload: PolicyReloadReply = reloadFailed) throws -> ControlServer {
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        return try ControlServer(path: f.dir + "/run/control.sock") { request, _ in
            switch request {
            case .status: return .status(StatusRenderTests.reply(offload: nil))
            case .peers: return .peers(peers)
            case .kick(let peer): return .kick(KickReply(peer: peer, endedSession: peer == "alice"))
            case .policyShow: return .policyShow(policyShow)
            case .policyReload: return .policyReload(reload)
            case .liveFlows(let peer): return .liveFlows(liveFlows.filter { peer == nil || $0.peer == peer })
            default: return .failure(.failed, "not in this test")
            }
        }
    }

    @Test func statusGolden() throws {
        let f = try Fixture()
        defer { f.remove() }
        let server = try Self.daemon(f)
        defer { server.stop() }
        let r = f.run(["status", "--json"])
        #expect(r.code == .ok, "\(r.err)")
        try expectGolden(r.out, "status.json")
        // With offloads: the same object, `offload` filled in.
        let offload = OffloadStatus(tun: "csum tso4 tso6 uso4 uso6", udpSegmentation: true, superPacketsRead: 120,
                                    superPacketsWritten: 3_400, packetsCoalesced: 41_000,
                                    udpCoalescing: true, coalescedReceives: 900, coalescedDatagrams: 23_000)
        try expectGolden(try Tunnelctl.encodeJSON(StatusJSON(StatusRenderTests.reply(offload: offload, store: StatusRenderTests.storeWithDrops, statusPage: StatusRenderTests.statusPage))) + "\n", "status-offload.json")
        // During a store outage: when it began, what waits, the error.
        var outage = StatusRenderTests.reply(offload: nil, store: StatusRenderTests.storeInOutage)
        outage.shared = SharedStoreHealth(backend: "postgresql", gateway: "gw-fra-1", lastSyncAtMs: 1_760_000_000_000,
                                          unavailableSinceMs: 1_760_000_001_000, error: "connection refused", pending: 2,
                                          localOpens: 1, sharedOpens: 40, journalDepth: 1_234, journalShipped: 56_000)
        outage.shared?.retentionFrom = "last-shared"  // the store is away: the last shared retention read
        outage.shared?.retentionSetBy = "gw-ams-2"
        outage.shared?.retentionSetAtMs = 1_759_990_000_000
        try expectGolden(try Tunnelctl.encodeJSON(StatusJSON(outage)) + "\n", "status-store-outage.json")
    }

    @Test func peersKickAndPolicyGolden() throws {
        let f = try Fixture()
        defer { f.remove() }
        let server = try Self.daemon(f)
        defer { server.stop() }
        let peers = f.run(["peers", "--json"])
        #expect(peers.code == .ok && peers.err.isEmpty, "\(peers.err)")
        try expectGolden(peers.out, "peers.json")
        // The text table shows each limit in force and the quota's use (issue 16); the daemon's
        // own peers carry them, a peer without them says `unknown`, never a made-up `no limits`.
        let text = f.run(["peers"])
        #expect(text.code == .ok && text.err.isEmpty, "\(text.err)")
        try expectGolden(text.out, "peers.txt")
        try expectGolden(f.run(["kick", "alice", "--json"]).out, "kick.json")
        let show = f.run(["policy", "show", "--json"])
        #expect(show.code == .ok)
        try expectGolden(show.out, "policy-show.json")
        let failed = f.run(["policy", "reload", "--json"])
        #expect(failed.code == .failure)
        try expectGolden(failed.out, "policy-reload-failed.json")
    }

    @Test func policyReloadGolden() throws {
        let f = try Fixture()
        defer { f.remove() }
        let server = try Self.daemon(f, reload: Self.reloaded)
        defer { server.stop() }
        let r = f.run(["policy", "reload", "--json"])
        #expect(r.code == .ok)
        try expectGolden(r.out, "policy-reload.json")
    }

    @Test func explainFlowWithTheDaemonGolden() throws {
        let f = try Fixture()
        defer { f.remove() }
        let server = try Self.daemon(f)
        defer { server.stop() }
        let r = f.run(["explain", "tcp 10.99.0.4:50000 -> 203.0.113.7:443", "--json"])
        #expect(r.code == .ok, "\(r.err)")
        try expectGolden(r.out, "explain-flow-live.json")
        let session = f.run(["session", "--json"])
        try expectGolden(session.out, "session-daemon.json")
    }

    // MARK: without the daemon

    @Test func storeCommandsGolden() throws {
        let f = try Fixture()
        defer { f.remove() }
        try expectGolden(f.run(["flows", "--json"]).out, "flows-all.json")
        let carol = f.run(["explain", "carol", "--json"])
        #expect(carol.code == .failure)
        try expectGolden(carol.out, "explain-carol.json")
        let web = f.run(["explain", "tcp 10.99.0.4:50000 -> 203.0.113.7:443", "--json"])
        #expect(web.code == .ok)
        try expectGolden(web.out, "explain-flow-web.json")
        let peers = f.run(["peers", "--json"])
        #expect(peers.err.contains("tunneld is not running"))
        try expectGolden(peers.out, "peers-store.json")
        let tier = f.run(["peer", "tier", "alice", "premium", "--json"])
        #expect(tier.code == .ok)
        try expectGolden(tier.out, "peer-tier.json")
    }

    @Test func captureListGolden() throws {
        let f = try Fixture()
        defer { f.remove() }
        let writer = try CaptureWriter(directory: f.dir + "/state/capture", detail: .full)
        let packet: [UInt8] = [0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 99, 0, 2, 192, 168, 1, 1, 0xCF, 0x08, 0, 53, 0, 8, 0, 0]
        let t0 = UInt64(Self.now) * 1_000_000 + 123_456
        _ = writer.write(packet: packet, timestampNanoseconds: t0)
        _ = writer.write(packet: packet, timestampNanoseconds: t0 + 2_500_000_000)
        writer.close()
        let r = f.run(["capture", "list", "--json"])
        #expect(r.code == .ok, "\(r.err)")
        try expectGolden(r.out, "capture-list.json")
    }

    @Test func auditRetentionAndPruneGolden() throws {
        let f = try HistoryFixture()
        try expectGolden(f.run(["audit", "start", "printer", "test", "--json"]).out, "audit-start.json")
        try expectGolden(f.run(["audit", "mark", "toner", "low", "--detail", "tray 2", "--json"]).out, "audit-mark.json")
        try expectGolden(f.run(["audit", "stop", "--json"]).out, "audit-stop.json")
        let set = f.run(["retention", "set", "flows=1h", "pcap-bytes=unlimited", "pcap-age=90s", "--json"])
        #expect(set.code == .ok)
        try expectGolden(set.out, "retention-set.json")

        let h = try HistoryFixture()
        try h.buildHistory()
        #expect(h.run(["retention", "set", "flows=1h", "sessions=forever"]).code == .ok)
        let dry = h.run(["prune", "--dry-run", "--json"])
        #expect(dry.code == .ok)
        // Byte estimates depend on SQLite's page layout: checked for sense here, zeroed for the golden.
        try expectGolden(try zeroingBytes(dry.out), "prune-dry-run.json")
        let real = h.run(["prune", "--json"])
        #expect(real.code == .ok)
        try expectGolden(try zeroingBytes(real.out), "prune.json")
    }

    /// The prune report with every family's `bytes` and `bytesReclaimed` set to 0 (after
    /// checking they are numbers), re-encoded with the one encoder.
    func zeroingBytes(_ text: String) throws -> String {
        guard case .object(var o) = try JSONDecoder().decode(GoldenJSON.self, from: Data(text.utf8)),
              case .array(let families)? = o["families"] else { throw CocoaError(.coderInvalidValue) }
        o["families"] = .array(families.map { f in
            guard case .object(var fo) = f, case .int(let b)? = fo["bytes"] else { return f }
            #expect(b >= 0)
            fo["bytes"] = .int(0)
            return .object(fo)
        })
        if case .int(let b)? = o["bytesReclaimed"] {
            #expect(b >= 0)
            o["bytesReclaimed"] = .int(0)
        }
        return try Tunnelctl.encodeJSON(GoldenJSON.object(o)) + "\n"
    }
}
