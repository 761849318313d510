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
    /// This router's own `state.db` (`LocalSharedState`, `Store = local`).
    case local
    case sqlite, postgresql
    var testDescription: String { rawValue }

    /// The backends several gateways share: change numbers, admissions, shipped history and the
    /// `SharedSchema` tables are theirs (the local store answers those as `LocalSharedState` says).
    static let shared: [SharedBackend] = [.sqlite, .postgresql]

    /// A fresh, empty shared state and a way to open more connections to it (nil: not available).
    func make() throws -> (state: any SharedState, connect: @Sendable () throws -> any SharedState)? {
        switch self {
        case .local:
            let dir = NSTemporaryDirectory() + "tv-local-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let path = dir + "/state.db"
            return (try LocalSharedState(path: path, gateway: "gw-local"), { try LocalSharedState(path: path, gateway: "gw-local") })
        case .sqlite:
            let dir = NSTemporaryDirectory() + "tv-shared-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let path = dir + "/shared.db"
            return (try SQLiteSharedState(path: path), { try SQLiteSharedState(path: path) })
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

    @Test(arguments: SharedBackend.shared) func pollingChanges(_ backend: SharedBackend) throws {
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

    /// Disabled / Expires changes: the latest per peer, polled by change number like windows.
    @Test(arguments: SharedBackend.shared) func sharingAdmission(_ backend: SharedBackend) throws {
        guard let (s, connect) = try backend.make() else { return }
        let (none, c0) = try s.admissions(changedAfter: 0)
        #expect(none.isEmpty && c0 == 0)
        let off = SharedAdmission(peer: "bob", disabled: true, expiresAt: nil, changedAt: t0, gateway: "gw-a")
        let exp = SharedAdmission(peer: "carol", disabled: false, expiresAt: t0 + 86_400_000, changedAt: t0, gateway: "gw-a")
        try s.setAdmission(off)
        try s.setAdmission(exp)
        let other = try connect()
        let (seen, c1) = try other.admissions(changedAfter: 0)
        #expect(seen == [off, exp] && c1 > 0)
        let on = SharedAdmission(peer: "bob", disabled: false, expiresAt: nil, changedAt: t0 + 5, gateway: "gw-b")
        try other.setAdmission(on)
        let (changed, c2) = try s.admissions(changedAfter: c1)
        #expect(changed == [on] && c2 > c1, "the enable made on gw-b replaces gw-a's disable")
        #expect(try s.admissions(changedAfter: 0).changes.count == 2 && s.admissions(changedAfter: c2).changes.isEmpty)
    }

    func flow(_ id: Int64, at: Int64, bytes: UInt64 = 100, closed: Bool = false) -> Flow {
        Flow(id: id, proto: 6, src: IPAddress("10.99.0.2")!, srcPort: 40_000 + UInt16(id % 20_000), dst: IPAddress("fd98::2")!, dstPort: 443,
             peer: "alice", host: id % 2 == 0 ? "example.com" : nil, firstSeen: at, lastSeen: at,
             counters: FlowCounters(bytesOut: bytes, bytesIn: bytes * 2, packetsOut: 1, packetsIn: 2), verdict: .allow,
             rule: "10-lan.rules:3", capture: nil, closedAt: closed ? at : nil, closeReason: closed ? "fin" : nil)
    }

    @Test(arguments: SharedBackend.shared) func shippingIsIdempotentAndPruneIsBounded(_ backend: SharedBackend) throws {
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
        #expect(try s.historyMarkers(since: .min, gateway: "gw-c", limit: 10).map(\.label) == [odd.label])
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
        let one = try s.historyFlows(since: .min, peer: nil, gateway: "gw-a", blockedOnly: false, limit: 1_000).filter { $0.id == 1 }
        #expect(one.map(\.row) == [flow(1, at: t0 + 9_000, bytes: 999, closed: true)].map { var f = $0; f.firstSeen = t0 + 1; return f })
        #expect(try s.historySessions(since: .min, peer: nil, gateway: "gw-a", limit: 10).map(\.endReason) == [.freeLimit])
        #expect(try s.historyRefusals(since: .min, peer: nil, gateway: "gw-a", limit: 10).map(\.count) == [7])
        // A flow refusal's host goes in (COPY of a new row) and follows an update (the staged upsert).
        var hosted = Refusal(id: 2, kind: .flow, peer: "bob", rule: "50-ads.rules:2", flowKey: "tcp 192.0.2.7:443", reason: "ads",
                             window: t0, count: 1, firstAt: t0 + 300, lastAt: t0 + 300, host: "ads.example.com",  // after the prune date below
                             decision: DecidedRule(generation: 3, place: "50-ads.rules:2", name: "ads", reason: "ads", tier: "trial"))
        try s.ship(HistoryBatch(gateway: "gw-d", refusals: [hosted], new: HistoryCounts(refusals: 1)))
        #expect(try s.historyRefusals(since: .min, peer: "bob", gateway: "gw-d", limit: 10).map(\.row) == [hosted])
        hosted.host = "track.example.com"
        hosted.count = 2
        try s.ship(HistoryBatch(gateway: "gw-d", refusals: [hosted]))
        #expect(try s.historyRefusals(since: .min, peer: "bob", gateway: "gw-d", limit: 10).map(\.row) == [hosted])
        #expect(try s.historyMarkers(since: .min, gateway: "gw-a", limit: 10).map(\.label) == [markers[0].label])
        // A flow's decision as taken goes in with the row and is replaced whole by a new one.
        var decided = flow(1, at: t0 + 400)
        decided.decision = DecidedRule(generation: 2, place: "30-mail.rules:2", name: "no-smtp", reason: "no outgoing mail", tier: "free")
        decided.rule = decided.decision?.place
        try s.ship(HistoryBatch(gateway: "gw-e", flows: [decided], new: HistoryCounts(flows: 1)))
        #expect(try s.historyFlows(since: .min, peer: nil, gateway: "gw-e", blockedOnly: false, limit: 10).map(\.row.decision) == [decided.decision])
        decided.decision = DecidedRule(generation: 5, place: nil, name: nil, reason: "default allow", tier: "premium")
        decided.rule = nil
        try s.ship(HistoryBatch(gateway: "gw-e", flows: [decided]))
        #expect(try s.historyFlows(since: .min, peer: nil, gateway: "gw-e", blockedOnly: false, limit: 10).map(\.row) == [decided])
        // Prune in batches of 64: everything older than t0+251 goes (flows 2…250 of gw-a, 1…10 of
        // gw-b, gw-c's marker).
        let n = try s.pruneHistory(before: t0 + 251, batch: 64)
        #expect(n == 249 + 10 + 1 + 1 + 1, "flows, the markers and the refusal before the date; the open session stays")
        #expect(try s.historyCounts(gateway: "gw-a").flows == 251)
    }

    /// Both backends build their tables from `SharedSchema`: each backend's catalogue holds
    /// exactly the described columns (in order, with their NULL-ability) and indexes.
    @Test(arguments: SharedBackend.shared) func schemaIsTheOneDescription(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        try Self.expectCatalogueIsTheDescription(s, backend)
    }

    /// `s`'s catalogue against `SharedSchema` (also run on a database migrated from an older version).
    static func expectCatalogueIsTheDescription(_ s: any SharedState, _ backend: SharedBackend) throws {
        var indexes: Set<String> = []
        for t in SharedSchema.tables {
            var found: [String] = []
            if let pg = s as? PostgresSharedState {
                let r = try pg.connection.execute("""
                    SELECT column_name, is_nullable FROM information_schema.columns
                    WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position
                    """, [t.name])
                found = r.rows.map { "\($0[0]!) \($0[1]! == "NO" ? "NOT NULL" : "NULL")" }
                indexes = Set(try pg.connection.execute("""
                    SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey'
                    """).rows.map { $0[0]! })
            } else if let lite = s as? SQLiteSharedState {
                let st = try lite.connection.prepared("SELECT name, \"notnull\", pk FROM pragma_table_info(?1)")
                st.bind(1, t.name)
                while try st.step() { found.append("\(st.text(0)) \(st.int64(1) != 0 || (st.int64(2) != 0 && t.primaryKey.count > 1) ? "NOT NULL" : "NULL")") }
                st.reset()
                let ix = try lite.connection.prepared("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'")
                indexes = []
                while try ix.step() { indexes.insert(ix.text(0)) }
                ix.reset()
            }
            #expect(found == t.columns.map { "\($0.name) \($0.notNull ? "NOT NULL" : "NULL")" }, "\(backend) \(t.name)")
        }
        #expect(indexes == Set(SharedSchema.indexes.keys), "\(backend)")
        #expect(!indexes.contains("tv_flows_peer_last_seen"), "version 2 dropped it")
    }

    /// What `tunnelctl flows|refusals|sessions|timeline` read back: every gateway's rows with
    /// their gateway, in the local store's orders, narrowed by peer, gateway, date and verdict.
    @Test(arguments: SharedBackend.shared) func readingHistoryBack(_ backend: SharedBackend) throws {
        guard let (s, _) = try backend.make() else { return }
        var blocked = flow(3, at: t0 + 30)
        blocked.verdict = .block
        blocked.peer = "bob"
        try s.ship(HistoryBatch(gateway: "gw-a", flows: [flow(1, at: t0 + 10), flow(2, at: t0 + 20), blocked],
                                sessions: [Session(id: 1, peer: "alice", startedAt: t0, endedAt: t0 + 5, endReason: .freeLimit, rxBytes: 1, txBytes: 2),
                                           Session(id: 2, peer: "alice", startedAt: t0 + 50, endedAt: nil, endReason: nil, rxBytes: 0, txBytes: 0)],
                                refusals: [Refusal(id: 1, kind: .session, peer: "alice", rule: "", flowKey: "", reason: "free-pause",
                                                   window: t0, count: 2, firstAt: t0 + 6, lastAt: t0 + 8)],
                                markers: [Marker(id: 1, at: t0 + 40, label: "later", kind: .manual, auditSessionId: nil, detail: "d")]))
        try s.ship(HistoryBatch(gateway: "gw-b", flows: [flow(1, at: t0 + 15)],
                                markers: [Marker(id: 1, at: t0 + 1, label: "earlier", kind: .automatic, auditSessionId: nil, detail: nil)]))
        let all = try s.historyFlows(since: .min, peer: nil, gateway: nil, blockedOnly: false, limit: 100)
        #expect(all.map { "\($0.gateway!)/\($0.id)" } == ["gw-a/3", "gw-a/2", "gw-b/1", "gw-a/1"], "newest first")
        #expect(all.first?.row == blocked && all.first?.dst == IPAddress("fd98::2"))
        #expect(try s.historyFlows(since: t0 + 15, peer: nil, gateway: nil, blockedOnly: false, limit: 100).count == 3)
        #expect(try s.historyFlows(since: .min, peer: "alice", gateway: "gw-a", blockedOnly: false, limit: 100).map(\.id) == [2, 1])
        #expect(try s.historyFlows(since: .min, peer: nil, gateway: nil, blockedOnly: true, limit: 100).map(\.peer) == ["bob"])
        #expect(try s.historyFlows(since: .min, peer: nil, gateway: nil, blockedOnly: false, limit: 2).count == 2)
        #expect(try s.historySessions(since: .min, peer: "alice", gateway: nil, limit: 10).map(\.id) == [2, 1])
        #expect(try s.historySessions(since: t0 + 6, peer: nil, gateway: nil, limit: 10).map(\.id) == [2], "the open one; the other ended before")
        #expect(try s.historyRefusals(since: t0 + 8, peer: "alice", gateway: "gw-a", limit: 10).map(\.reason) == ["free-pause"])
        #expect(try s.historyRefusals(since: t0 + 9, peer: nil, gateway: nil, limit: 10).isEmpty)
        let markers = try s.readingOneSnapshot { try s.historyMarkers(since: .min, gateway: nil, limit: 10) }
        #expect(markers.map { "\($0.gateway!) \($0.label) \($0.kind) \($0.detail ?? "-")" } == ["gw-b earlier automatic -", "gw-a later manual d"], "oldest first")
        #expect(try s.historyMarkers(since: .min, gateway: "gw-z", limit: 10).isEmpty)
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
