import Core
import Foundation
import Glibc
import Runtime
@testable import Store
import Synchronization
import Testing

/// The shared state's contract (`SharedState`, issue 19) against every backend. PostgreSQL runs
/// on the cluster `scripts/test.sh` starts (`TUNNELVISION_TEST_PG`, a libpq connection string);
/// each test gets a schema of its own. Without the variable the PostgreSQL cases fail when
/// `TUNNELVISION_REQUIRE_PG=1` (the test command sets it) and are skipped with a note otherwise.
enum SharedBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case postgresql
    var testDescription: String { rawValue }

    /// A fresh, empty shared state and a way to open more connections to it (nil: not available).
    func make() throws -> (state: any SharedState, connect: @Sendable () throws -> any SharedState)? {
        switch self {
        case .postgresql:
            guard let conninfo = PGTestCluster.conninfo() else { return nil }
            let schema = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            try PGConnection(conninfo: conninfo).execute("CREATE SCHEMA \(schema)")
            let scoped = conninfo + " options='-csearch_path=\(schema)'"
            return (try PostgresSharedState(conninfo: scoped), { try PostgresSharedState(conninfo: scoped) })
        }
    }
}

enum PGTestCluster {
    static func conninfo() -> String? {
        if let c = ProcessInfo.processInfo.environment["TUNNELVISION_TEST_PG"], !c.isEmpty { return c }
        if ProcessInfo.processInfo.environment["TUNNELVISION_REQUIRE_PG"] == "1" {
            Issue.record("TUNNELVISION_TEST_PG is not set but TUNNELVISION_REQUIRE_PG=1: the PostgreSQL cluster of scripts/test.sh did not start")
        } else {
            print("note: PostgreSQL store tests skipped (set TUNNELVISION_TEST_PG to a libpq connection string; scripts/test.sh does)")
        }
        return nil
    }
}

@Suite struct SharedStateTests {
    let t0: Int64 = 1_700_000_000_000
    func dates(_ start: Int64) -> WindowDates { WindowDates(allowedUntil: start + 20_000, reconnectAt: start + 50_000) }

    @Test(arguments: SharedBackend.allCases) func openingAWindow(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        let first = try s.openWindow(peer: "alice", dates: dates(t0), gateway: "gw-a", now: t0)
        #expect(first.opened && first.window.epoch == 1 && first.window.gateway == "gw-a" && first.window.openedAt == t0)
        #expect(first.window.dates == dates(t0) && first.window.usedUp == 0)
        // In the window and in the pause: the stored window comes back, unchanged.
        for now in [t0 + 1, t0 + 20_000, t0 + 49_999] {
            let again = try s.openWindow(peer: "alice", dates: dates(now), gateway: "gw-b", now: now)
            #expect(!again.opened && again.window == first.window)
        }
        // Pause over: a new window, the next epoch, use reset.
        _ = try s.addUse(peer: "alice", epoch: 1, up: 5, down: 7)
        let next = try s.openWindow(peer: "alice", dates: dates(t0 + 50_000), gateway: "gw-b", now: t0 + 50_000)
        #expect(next.opened && next.window.epoch == 2 && next.window.gateway == "gw-b" && next.window.usedUp == 0 && next.window.usedDown == 0)
        #expect(try s.window(peer: "alice") == next.window)
        #expect(try s.window(peer: "bob") == nil)
    }

    @Test(arguments: SharedBackend.allCases) func movingAndUsingAWindow(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        let w = try s.openWindow(peer: "alice", dates: dates(t0), gateway: "gw-a", now: t0).window
        let ended = WindowDates(allowedUntil: t0 + 5_000, reconnectAt: t0 + 35_000)
        #expect(try s.updateWindow(peer: "alice", epoch: w.epoch, dates: ended)?.dates == ended)
        #expect(try s.updateWindow(peer: "alice", epoch: w.epoch + 1, dates: dates(t0))?.dates == ended, "another epoch: unchanged")
        #expect(try s.updateWindow(peer: "nobody", epoch: 1, dates: dates(t0)) == nil)
        let a = try #require(try s.addUse(peer: "alice", epoch: w.epoch, up: 100, down: 1_000))
        let b = try #require(try s.addUse(peer: "alice", epoch: w.epoch, up: 1, down: 2))
        #expect(a.usedUp == 100 && b.usedUp == 101 && b.usedDown == 1_002)
        #expect(try s.addUse(peer: "alice", epoch: w.epoch + 1, up: 1, down: 1) == nil, "a delta of an old window is not counted")
        #expect(try s.window(peer: "alice")?.usedDown == 1_002)
        #expect(try s.deleteWindow(peer: "alice") && !(try s.deleteWindow(peer: "alice")))
    }

    @Test(arguments: SharedBackend.allCases) func reconcilingEarliestWins(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        // None stored: ours is stored.
        let mine = SharedWindow(peer: "alice", epoch: 0, dates: dates(t0), usedUp: 10, usedDown: 20, gateway: "gw-a", openedAt: t0)
        let r1 = try s.reconcile(mine, now: t0 + 1_000)
        #expect(r1.epoch == 1 && r1.dates == dates(t0) && r1.usedUp == 10 && r1.gateway == "gw-a")
        // A later one from B loses; the stored one stays.
        let later = SharedWindow(peer: "alice", epoch: 0, dates: dates(t0 + 3_000), usedUp: 5, usedDown: 5, gateway: "gw-b", openedAt: t0 + 3_000)
        #expect(try s.reconcile(later, now: t0 + 4_000) == r1)
        // An earlier one wins, and the loser's use counts in it.
        let earlier = SharedWindow(peer: "alice", epoch: 0, dates: dates(t0 - 2_000), usedUp: 1, usedDown: 2, gateway: "gw-c", openedAt: t0 - 2_000)
        let r3 = try s.reconcile(earlier, now: t0 + 5_000)
        #expect(r3.epoch == 2 && r3.gateway == "gw-c" && r3.dates == dates(t0 - 2_000) && r3.usedUp == 11 && r3.usedDown == 22)
        #expect(try s.window(peer: "alice") == r3)
        // The stored pause is over: ours is stored whatever its date.
        let r4 = try s.reconcile(later, now: t0 + 60_000)
        #expect(r4.epoch == 3 && r4.gateway == "gw-b" && r4.usedUp == 5)
    }

    @Test(arguments: SharedBackend.allCases) func pollingChanges(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        let (none, c0) = try s.windows(changedAfter: 0)
        #expect(none.isEmpty)
        _ = try s.openWindow(peer: "alice", dates: dates(t0), gateway: "gw-a", now: t0)
        _ = try s.openWindow(peer: "bob", dates: dates(t0), gateway: "gw-a", now: t0)
        let (all, c1) = try s.windows(changedAfter: c0)
        #expect(Set(all.map(\.peer)) == ["alice", "bob"] && c1 > c0)
        _ = try s.addUse(peer: "bob", epoch: 1, up: 1, down: 1)
        let (changed, c2) = try s.windows(changedAfter: c1)
        #expect(changed.map(\.peer) == ["bob"] && c2 > c1)
        #expect(try s.windows(changedAfter: c2).windows.isEmpty)
        // Tiers: set, changed, cleared (a since-0 read lists only overrides in force).
        try s.setTier(peer: "alice", tier: .premium, at: t0)
        try s.setTier(peer: "bob", tier: PeerTier(rawValue: "trial")!, at: t0)
        let (t, tc1) = try s.tiers(changedAfter: 0)
        #expect(Set(t.map(\.peer)) == ["alice", "bob"])
        try s.setTier(peer: "alice", tier: nil, at: t0 + 1)
        let (cleared, tc2) = try s.tiers(changedAfter: tc1)
        #expect(cleared == [SharedTierChange(peer: "alice", tier: nil, changedAt: t0 + 1)] && tc2 > tc1)
        #expect(try s.tiers(changedAfter: 0).changes.map(\.peer) == ["bob"])
        #expect(try s.tiers(changedAfter: 0).latest >= tc2, "the cursor passes cleared rows too")
    }

    func flow(_ id: Int64, at: Int64, bytes: UInt64 = 100, closed: Bool = false) -> Flow {
        Flow(id: id, proto: 6, src: IPAddress("10.99.0.2")!, srcPort: 40_000 + UInt16(id % 20_000), dst: IPAddress("fd98::2")!, dstPort: 443,
             peer: "alice", host: id % 2 == 0 ? "example.com" : nil, firstSeen: at, lastSeen: at,
             counters: FlowCounters(bytesOut: bytes, bytesIn: bytes * 2, packetsOut: 1, packetsIn: 2), verdict: .allow,
             rule: "10-lan.rules:3", capture: nil, closedAt: closed ? at : nil, closeReason: closed ? "fin" : nil)
    }

    @Test(arguments: SharedBackend.allCases) func shippingIsIdempotentAndPruneIsBounded(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        let flows = (1...500).map { flow($0, at: t0 + $0) }
        let sessions = [Session(id: 1, peer: "alice", startedAt: t0, endedAt: nil, endReason: nil, rxBytes: 0, txBytes: 0)]
        let refusals = [Refusal(id: 1, kind: .session, peer: "alice", rule: "", flowKey: "", reason: "free-pause", window: t0, count: 1, firstAt: t0, lastAt: t0)]
        let markers = [Marker(id: 1, at: t0, label: "quote \" and backslash \\ and {braces}, commas", kind: .manual, auditSessionId: nil, detail: nil)]
        // Every row marked new (as a journal chunk marks rows inserted since the last chunk): the
        // second ship finds them there (a lost acknowledge) and upserts instead; nothing doubles.
        let batch = HistoryBatch(gateway: "gw-a", flows: flows, sessions: sessions, refusals: refusals, markers: markers,
                                 new: HistoryCounts(flows: 500, sessions: 1, refusals: 1, markers: 1))
        try s.ship(batch)
        try s.ship(batch)
        // Tabs, newlines and backslashes survive COPY's text format.
        let odd = Marker(id: 2, at: t0 - 1, label: "tab\tnewline\ncr\rbackslash\\N", kind: .manual, auditSessionId: nil, detail: nil)
        try s.ship(HistoryBatch(gateway: "gw-c", markers: [odd], new: HistoryCounts(markers: 1)))
        if let pg = s as? PostgresSharedState {
            #expect(try pg.connection.execute("SELECT label FROM tv_markers WHERE gateway = 'gw-c'").rows == [[odd.label]])
            _ = try pg.connection.execute("DELETE FROM tv_markers WHERE gateway = 'gw-c'")
        }
        #expect(try s.historyCounts(gateway: "gw-a") == HistoryCounts(flows: 500, sessions: 1, refusals: 1, markers: 1))
        // Updated rows go in place; another gateway's rows with the same ids are its own.
        var closed = sessions[0]
        closed.endedAt = t0 + 9_000
        closed.endReason = .freeLimit
        var r = refusals[0]
        r.count = 7
        try s.ship(HistoryBatch(gateway: "gw-a", flows: [flow(1, at: t0 + 9_000, bytes: 999, closed: true)], sessions: [closed], refusals: [r]))
        try s.ship(HistoryBatch(gateway: "gw-b", flows: Array(flows.prefix(10))))
        #expect(try s.historyCounts(gateway: "gw-a") == HistoryCounts(flows: 500, sessions: 1, refusals: 1, markers: 1))
        #expect(try s.historyCounts(gateway: nil).flows == 510)
        if let pg = s as? PostgresSharedState {
            let row = try pg.connection.execute("SELECT bytes_out, closed_at, close_reason, host(src_addr), host(dst_addr) FROM tv_flows WHERE gateway = 'gw-a' AND id = 1")
            #expect(row.rows == [["999", "\(t0 + 9_000)", "fin", "10.99.0.2", "fd98::2"]])
            #expect(try pg.connection.execute("SELECT end_reason FROM tv_sessions").rows == [["free-limit"]])
            #expect(try pg.connection.execute("SELECT count FROM tv_refusals").rows == [["7"]])
            #expect(try pg.connection.execute("SELECT label FROM tv_markers").rows == [[markers[0].label]])
        }
        // Prune in batches of 64: everything older than t0+251 goes (flows 2…250 of gw-a, 1…10 of gw-b).
        let n = try s.pruneHistory(before: t0 + 251, batch: 64)
        #expect(n == 249 + 10 + 1 + 1, "flows, the marker and the refusal before the date; the open session stays")
        #expect(try s.historyCounts(gateway: "gw-a").flows == 251)
    }

    /// Two gateways open the same peer's window at the same instant, 1,000 times: exactly one
    /// opens it, and both see the same window.
    @Test(arguments: SharedBackend.allCases) func racingGatewaysAgreeOnOneWindow(_ backend: SharedBackend) throws {
        guard let (_, connect) = try backend.make() else { return }
        let rounds = 1_000
        final class Side: @unchecked Sendable {
            // Safe: each Side is used by its own thread between barrier waits; results read after join.
            let store: any SharedState
            var results: [WindowOpen?]
            var errors: [String] = []
            init(_ s: any SharedState, _ n: Int) { store = s; results = Array(repeating: nil, count: n) }
        }
        let sides = [Side(try connect(), rounds), Side(try connect(), rounds)]
        final class Barrier: @unchecked Sendable {
            // Safe: a pthread barrier is made for threads to share; freed after both are joined.
            let p = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)
            init() { pthread_barrier_init(p, nil, 2) }
            func wait() { pthread_barrier_wait(p) }
            deinit { pthread_barrier_destroy(p); p.deallocate() }
        }
        let barrier = Barrier()
        let t0 = self.t0
        let threads = sides.enumerated().map { (i, side) in
            WorkerThread(name: "race-\(i)") {
                for round in 0..<rounds {
                    let now = t0 + Int64(round) * 60_000  // each round: the last pause is over
                    barrier.wait()
                    do {
                        side.results[round] = try side.store.openWindow(
                            peer: "alice", dates: WindowDates(allowedUntil: now + 20_000, reconnectAt: now + 50_000), gateway: "gw-\(i)", now: now)
                    } catch { side.errors.append("\(error)") }
                }
            }
        }
        for t in threads { t.join() }
        #expect(sides[0].errors.isEmpty && sides[1].errors.isEmpty, "\(sides[0].errors.prefix(3)) \(sides[1].errors.prefix(3))")
        var bad = 0
        for round in 0..<rounds {
            guard let a = sides[0].results[round], let b = sides[1].results[round] else { bad += 1; continue }
            if a.opened == b.opened || a.window != b.window || a.window.epoch != Int64(round + 1) { bad += 1 }
        }
        #expect(bad == 0, "rounds where the gateways did not agree on exactly one window: \(bad) of \(rounds)")
    }
}
