import Core
import Foundation
import Testing
@testable import Store

/// A flow or refusal row keeps the decision as it was taken (schema v8): the generation, the
/// rule's place and name, the reason, the tier. Nothing read later re-attributes it.
@Suite struct DecisionRecordTests {
    static let gen1 = DecidedRule(generation: 1, place: "/p/30-mail.rules:2", name: "no-smtp", reason: "no outgoing mail",
                                  tier: "free")
    static let gen2 = DecidedRule(generation: 2, place: "/p/30-mail.rules:2", name: "ads", reason: "ad and tracking domains",
                                  tier: "trial")

    @Test func aFlowRowKeepsItsDecisionThroughUpdatesAndReopening() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            let s = try StateStore(path: dir.db)
            try s.insertFlow(FlowOpen(id: 7, proto: 6, src: IPAddress("10.99.0.2")!, srcPort: 40000, dst: IPAddress("203.0.113.25")!,
                                      dstPort: 25, peer: "bob", at: 1_000, verdict: .block, decision: Self.gen1))
            // The periodic sweep carries counts only: the decision stays.
            try s.updateFlow(FlowUpdate(id: 7, lastSeen: 2_000, counters: FlowCounters(bytesOut: 60, bytesIn: 0, packetsOut: 1, packetsIn: 0)))
        }
        var row = try #require(try StateStore(path: dir.db).flow(id: 7))
        #expect(row.rule == "/p/30-mail.rules:2")
        #expect(row.decision == Self.gen1)
        #expect(row.verdict == .block && row.counters.packetsOut == 1)
        // Closed by a shutdown long after its last packet: closed then, last seen when it was.
        let s = try StateStore(path: dir.db)
        try s.closeFlow(FlowClose(id: 7, at: 90_000, counters: FlowCounters(bytesOut: 60, bytesIn: 0, packetsOut: 1, packetsIn: 0),
                                  reason: "shutdown", lastSeen: 2_000))
        row = try #require(try s.flow(id: 7))
        #expect(row.closedAt == 90_000 && row.lastSeen == 2_000 && row.decision == Self.gen1)
    }

    @Test func refusalsOfTheSamePlaceInTwoGenerationsAreTwoRows() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let s = try StateStore(path: dir.db)
        let dst = IPAddress("203.0.113.25")!
        for (d, at) in [(Self.gen1, Int64(1_000)), (Self.gen1, 1_100), (Self.gen2, 1_200)] {
            try s.recordRefusal(.flow(peer: "bob", decision: d, proto: 6, dst: dst, dstPort: 25, at: at))
        }
        let rows = try StateStore(path: dir.db).refusals(kind: .flow).sorted { $0.firstAt < $1.firstAt }
        #expect(rows.count == 2)
        #expect(rows.map(\.count) == [2, 1])
        #expect(rows.map(\.decision) == [Self.gen1, Self.gen2])
        #expect(rows.map(\.reason) == ["no outgoing mail", "ad and tracking domains"])
        // A default refusal keys on `default` and keeps its generation.
        let byDefault = DecidedRule(generation: 4, place: nil, name: nil, reason: "default block", tier: nil)
        try s.recordRefusal(.flow(peer: "bob", decision: byDefault, proto: 6, dst: dst, dstPort: 26, at: 1_300))
        let d = try #require(try s.refusals(kind: .flow).first { $0.flowKey.hasSuffix(":26") })
        #expect(d.rule == "default" && d.decision == byDefault)
    }

    /// v8 rebuilds `refusals` for its key: a v7 store keeps its rows (no decision recorded), its
    /// indexes and its journal triggers.
    @Test func fromV7RowsAreKeptWithoutADecision() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            let c = try Connection(path: dir.db)
            _ = try Schema.migrate(c, to: 7)
            try c.execute("""
                INSERT INTO refusals (kind, peer, rule, flow_key, reason, window, count, first_at, last_at, host)
                VALUES ('flow', 'alice', '50-ads.rules:2', 'tcp 192.0.2.7:443', 'ads', 0, 3, 100, 200, 'ads.example.com');
                INSERT INTO flows (id, proto, src_addr, src_port, dst_addr, dst_port, peer, first_seen, last_seen, verdict, rule)
                VALUES (1, 6, x'00', 1, x'00', 2, 'alice', 100, 200, 'block', '50-ads.rules:2');
                """)
        }
        let store = try StateStore(path: dir.db)
        #expect(try store.schemaVersion == Schema.currentVersion)
        let r = try #require(try store.refusals(kind: .flow).first)
        #expect(r.count == 3 && r.host == "ads.example.com" && r.decision == nil)
        #expect(try store.flow(id: 1)?.decision == nil)
        let objects = try MigrationTests.objects(store)
        for o in ["index refusals_last_at", "index refusals_peer_last_at", "trigger refusals_ship_insert", "trigger refusals_ship_update"] {
            #expect(objects.contains(o), "missing \(o)")
        }
    }
}
