import ControlProtocol
import Daemon
import Core
import Foundation
@testable import Store
import Testing

@testable import tunnelctl

/// Every view of a peer's tier gives one answer (`peer list`, `peer show`, `peers`, `session`,
/// `policy test`, `explain 'FLOW'`): after `peer tier`, with this router's store and with a
/// shared one (SQLite; PostgreSQL with `TUNNELVISION_TEST_PG`), when the override lapses (its
/// `[Tier]` is gone) or is cleared on another gateway, and from a running tunneld, whose registry
/// wins over the store.
@Suite struct TierViewsAgreeTests {
    typealias Fixture = SessionCommandTests.Fixture
    static let trial = PeerTier(rawValue: "trial")!
    static let flow = "tcp 10.99.0.2:40000 -> 203.0.113.7:443"

    enum Backend: String, CaseIterable, Sendable { case local, sqlite, postgresql }

    /// The session fixture with a `[Tier trial]` class and, for a shared backend, `Store =` naming
    /// a fresh one (nil: PostgreSQL is not available here).
    func fixture(_ backend: Backend) throws -> (Fixture, (any SharedState)?)? {
        let f = try Fixture()
        var text = try String(contentsOfFile: f.config, encoding: .utf8) + "\n[Tier trial]\nQuota = 1GiB\n"
        var shared: (any SharedState)?
        switch backend {
        case .local: break
        case .sqlite:
            text = text.replacingOccurrences(of: "[Interface]\n", with: "[Interface]\nStore = sqlite:\(f.dir)/shared.db\nGatewayName = gw-a\n")
            shared = try SQLiteSharedState(path: f.dir + "/shared.db")
        case .postgresql:
            guard let conninfo = ProcessInfo.processInfo.environment["TUNNELVISION_TEST_PG"], !conninfo.isEmpty else { return nil }
            let schema = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            try PGConnection(conninfo: conninfo).execute("CREATE SCHEMA \(schema)")
            let scoped = conninfo + " options='-csearch_path=\(schema)'"
            text = text.replacingOccurrences(of: "[Interface]\n", with: "[Interface]\nStore = \(scoped)\nGatewayName = gw-a\n")
            shared = try PostgresSharedState(conninfo: scoped)
        }
        try text.write(toFile: f.config, atomically: true, encoding: .utf8)
        return (f, shared)
    }

    /// alice's tier as each view says it.
    func views(_ f: Fixture, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: String] {
        func json(_ argv: [String]) throws -> Any {
            let r = f.run(argv + ["--json"])
            #expect(r.code == .ok || argv.first == "policy" || argv.first == "explain", "\(argv): \(r.err)", sourceLocation: sourceLocation)
            return try JSONSerialization.jsonObject(with: Data(r.out.utf8))
        }
        var out: [String: String] = [:]
        let list = try json(["peer", "list"]) as? [[String: Any]]
        out["peer list"] = list?.first { $0["peer"] as? String == "alice" }?["tier"] as? String
        out["peer show"] = (try json(["peer", "show", "alice"]) as? [String: Any])?["tier"] as? String
        let peers = try json(["peers"]) as? [[String: Any]]
        out["peers"] = peers?.first { $0["peer"] as? String == "alice" }?["tier"] as? String
        out["session"] = (try json(["session", "alice"]) as? [String: Any])?["tier"] as? String
        let test = try json(["policy", "test", Self.flow]) as? [String: Any]
        out["policy test"] = (test?["flow"] as? [String: Any])?["tier"] as? String
        let explain = try json(["explain", Self.flow]) as? [String: Any]
        out["explain FLOW"] = (explain?["flow"] as? [String: Any])?["tier"] as? String
        return out
    }

    func expectAll(_ f: Fixture, _ tier: String, _ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let v = try views(f, sourceLocation: sourceLocation)
        #expect(v.count == 6 && v.values.allSatisfy { $0 == tier }, "\(why): \(v)", sourceLocation: sourceLocation)
    }

    @Test(arguments: Backend.allCases)
    func viewsAgreeAfterPeerTierAndWhenTheOverrideEnds(backend: Backend) throws {
        guard let (f, shared) = try fixture(backend) else { return }
        defer { f.remove() }
        try expectAll(f, "free", "before")
        // tunneld not running: tunnelctl writes the store (and the shared store) itself.
        let set = f.run(["peer", "tier", "alice", "trial"])
        #expect(set.code == .ok && set.out.contains("(was free)"), "\(set)")
        try expectAll(f, "trial", "after peer tier")
        if let shared {
            #expect(try shared.tiers(changedAfter: 0).changes.contains { $0.peer == "alice" && $0.tier == Self.trial },
                    "every gateway sees the override")
        }
        let show = f.run(["peer", "show", "alice"])
        #expect(show.out.contains("tier: trial (tunnelctl peer tier") && show.out.contains("configured: free)"), "\(show.out)")
        // The override ends: another gateway clears it (shared), or [Tier trial] leaves the
        // config, so the override lapses to the configured tier (every store kind).
        if let shared {
            try shared.setTier(peer: "alice", tier: nil, at: HistoryFixture.now + 1)
            try expectAll(f, "free", "cleared in the shared store")
            try shared.setTier(peer: "alice", tier: Self.trial, at: HistoryFixture.now + 2)
            try expectAll(f, "trial", "set again in the shared store")
        }
        let text = try String(contentsOfFile: f.config, encoding: .utf8)
        try text.replacingOccurrences(of: "\n[Tier trial]\nQuota = 1GiB\n", with: "\n").write(toFile: f.config, atomically: true, encoding: .utf8)
        try expectAll(f, "free", "lapsed: [Tier trial] is gone")
        #expect(f.run(["peer", "show", "alice"]).out.contains("tier: free (override trial lapsed: no [Tier trial] configured)"))
    }

    /// With tunneld running, its registry (the tier's owner) answers every view, even where the
    /// store says otherwise (a write the store has not taken yet).
    @Test func aRunningTunneldsRegistryWins() throws {
        guard let (f, _) = try fixture(.local) else { return }
        defer { f.remove() }
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let server = try ControlServer(path: f.dir + "/run/control.sock") { request, _ in
            guard case .peers = request else { return .failure(.failed, "not in this test") }
            var alice = PeerStatus(name: "alice", publicKey: "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", tier: Self.trial,
                                   session: .connected, allowedIPs: ["10.99.0.2/32"])
            alice.configuredTier = .free
            alice.tierOrigin = "admin"
            alice.tierSinceMs = HistoryFixture.now - 60_000
            return .peers([alice])
        }
        defer { server.stop() }
        try expectAll(f, "trial", "from tunneld")
    }
}
