import Core
import Foundation
@testable import Store
import Testing

/// The store protocol over this router's own `state.db` (`LocalSharedState`, `Store = local`):
/// what the contract tests of `SharedStateTests` do not cover because one router answers them its
/// own way — whole-set polls, no admissions or shipping, the settings row's retention section,
/// this router's history and prune — and the watchdog's `putWindow` keeping the window numbers.
@Suite struct LocalSharedStateTests {
    let t0: Int64 = 1_700_000_000_000
    func dates(_ start: Int64) -> WindowDates { WindowDates(allowedUntil: start + 20_000, reconnectAt: start + 50_000) }

    @Test func pollsAnswerTheWholeSetWithoutChangeNumbers() throws {
        let dir = TempDir()
        let s = try LocalSharedState(path: dir.db, gateway: "gw-1")
        _ = try s.openWindow(peer: "alice", dates: dates(t0), gateway: "gw-1", now: t0)
        _ = try s.openWindow(peer: "bob", dates: dates(t0), gateway: "gw-1", now: t0)
        let (all, latest) = try s.windows(changedAfter: 0)
        #expect(all.map(\.peer) == ["alice", "bob"] && latest == 0)
        #expect(try s.windows(changedAfter: 12_345).windows.count == 2, "no change numbers: every call is the whole set")
        try s.setTier(peer: "alice", tier: .premium, at: t0)
        try s.setTier(peer: "bob", tier: PeerTier(rawValue: "trial")!, at: t0)
        try s.setTier(peer: "alice", tier: nil, at: t0 + 1)
        let (tiers, tl) = try s.tiers(changedAfter: 0)
        #expect(tiers == [SharedTierChange(peer: "bob", tier: PeerTier(rawValue: "trial")!, changedAt: t0)] && tl == 0)
        // The same rows the daemon and the rest of tunnelctl read.
        #expect(try s.store.tierOverrides().map(\.peer) == ["bob"])
        #expect(try s.store.window(peer: "alice")?.dates == dates(t0))
    }

    @Test func admissionsAreTheConfigsAndNothingShipsIn() throws {
        let dir = TempDir()
        let s = try LocalSharedState(path: dir.db, gateway: "gw-1")
        #expect(try s.admissions(changedAfter: 0).changes.isEmpty)
        do {
            try s.setAdmission(SharedAdmission(peer: "bob", disabled: true, expiresAt: nil, changedAt: t0, gateway: "gw-1"))
            Issue.record("a local admission was taken")
        } catch {
            #expect("\(error)".contains("config file holds Disabled and Expires"), "\(error)")
        }
        #expect(throws: StoreError.self) { try s.ship(HistoryBatch(gateway: "gw-2", markers: [])) }
        #expect(s.backend == "local")
    }

    @Test func settingsAreTheRowsRetentionSection() throws {
        let dir = TempDir()
        let s = try LocalSharedState(path: dir.db, gateway: "gw-1")
        #expect(try s.settings() == nil)
        var local = Settings.factory
        try local.set("capture", "on")
        try local.set("flows", "2d")
        try s.store.putSettings(local, at: t0)
        let row = try #require(try s.settings())
        #expect(row.text == local.sharedJSON && row.changedAt == t0 && row.gateway == "gw-1")
        var shared = Settings.factory
        try shared.set("sessions", "9d")
        let stored = try s.setSettings(text: shared.sharedJSON, gateway: "gw-1", at: t0 + 5)
        #expect(stored.text == shared.sharedJSON)
        let after = try s.store.settings().settings
        #expect(after.retention == shared.retention, "retention replaced")
        #expect(after.capture == local.capture, "capture kept: it is not part of the shared section")
        #expect(throws: StoreError.self) { try s.setSettings(text: "not json", gateway: "gw-1", at: t0 + 6) }
        #expect(try s.store.settings().settings == after, "a bad text stores nothing")
    }

    @Test func historyIsThisRoutersAndPrunesInBatches() throws {
        let dir = TempDir()
        let s = try LocalSharedState(path: dir.db, gateway: "gw-1")
        let open = try s.store.openSession(peer: "alice", at: t0)
        let ended = try s.store.openSession(peer: "bob", at: t0)
        _ = try s.store.closeSession(SessionClose(peer: "bob", at: t0 + 10, reason: .idle, rxBytes: 1, txBytes: 2))
        for i in 0..<130 { _ = try s.store.addMarker(MarkerInput(at: t0 + Int64(i), label: "m\(i)", kind: .manual)) }
        try s.store.recordRefusal(.session(peer: "alice", windowEnd: t0, at: t0 + 1))
        #expect(try s.historyCounts(gateway: nil) == HistoryCounts(flows: 0, sessions: 2, refusals: 1, markers: 130))
        #expect(try s.historyCounts(gateway: "gw-1") == s.historyCounts(gateway: nil))
        #expect(try s.historyCounts(gateway: "gw-2") == HistoryCounts(), "another gateway's rows: none here")
        #expect(try s.historySessions(since: .min, peer: nil, gateway: nil, limit: 10).map(\.id) == [ended, open])
        #expect(try s.historySessions(since: .min, peer: nil, gateway: "gw-2", limit: 10).isEmpty)
        #expect(try s.historyMarkers(since: .min, gateway: nil, limit: 2).map { $0.gateway == nil } == [true, true])
        // Everything older than t0 + 100 goes in batches of 7: 100 markers, the ended session, the refusal.
        let n = try s.pruneHistory(cutoffs: HistoryCutoffs(all: t0 + 100), batch: 7)
        #expect(n == HistoryCounts(flows: 0, sessions: 1, refusals: 1, markers: 100))
        #expect(try s.store.openSessions().map(\.id) == [open], "an open session is never pruned")
        #expect(try s.historyCounts(gateway: nil).markers == 30)
    }

    /// The watchdog writes windows through `WindowLedger` → `putWindow`; the protocol reads the
    /// same rows. An opening is the peer's next window; a move keeps its number and opening.
    @Test func putWindowKeepsTheNumbersOpenWindowMakes() throws {
        let dir = TempDir()
        let s = try LocalSharedState(path: dir.db, gateway: "gw-1")
        try s.store.putWindow(SessionWindow(peer: "alice", dates: dates(t0)), opened: true, at: t0, gateway: "gw-1")
        #expect(try s.window(peer: "alice") == SharedWindow(peer: "alice", epoch: 1, dates: dates(t0), gateway: "gw-1", openedAt: t0))
        let moved = WindowDates(allowedUntil: t0 + 5_000, reconnectAt: t0 + 35_000)
        try s.store.putWindow(SessionWindow(peer: "alice", dates: moved, usedUp: 9, usedDown: 8), at: t0 + 5_000)
        #expect(try s.window(peer: "alice") == SharedWindow(peer: "alice", epoch: 1, dates: moved, usedUp: 9, usedDown: 8, gateway: "gw-1", openedAt: t0))
        #expect(try s.addUse(peer: "alice", epoch: 1, up: 1, down: 2)?.usedDown == 10)
        try s.store.putWindow(SessionWindow(peer: "alice", dates: dates(t0 + 50_000)), opened: true, at: t0 + 50_000, gateway: "gw-1")
        let next = try #require(try s.window(peer: "alice"))
        #expect(next.epoch == 2 && next.openedAt == t0 + 50_000 && next.usedUp == 0)
        #expect(try s.updateWindow(peer: "alice", epoch: 1, dates: moved)?.dates == dates(t0 + 50_000), "the old window's move is not applied")
        // And the protocol's own open is the next one after the watchdog's.
        #expect(try s.openWindow(peer: "alice", dates: dates(t0 + 100_000), gateway: "gw-1", now: t0 + 100_000).window.epoch == 3)
    }

    /// A v6 store (before window numbers) migrates in place: its windows are epoch 1, opening
    /// unknown (0), and read through the protocol like any other.
    @Test func aV6StoreKeepsItsWindows() throws {
        let dir = TempDir()
        do {
            let c = try Connection(path: dir.db)
            for m in Schema.migrations where m.version <= 6 {
                try c.transaction {
                    try c.execute(m.sql)
                    try c.execute("PRAGMA user_version=\(m.version)")
                }
            }
            try c.execute("INSERT INTO session_windows (peer, allowed_until, reconnect_at, used_up, used_down) VALUES ('alice', 900, 3600, 5, 6)")
        }
        #expect(throws: StoreError.schemaTooOld(path: dir.db, found: 6, required: Schema.currentVersion)) {
            try LocalSharedState(path: dir.db, gateway: "gw-1", readOnly: true)
        }
        let s = try LocalSharedState(path: dir.db, gateway: "gw-1")
        #expect(try s.window(peer: "alice") == SharedWindow(peer: "alice", epoch: 1, dates: WindowDates(allowedUntil: 900, reconnectAt: 3600),
                                                             usedUp: 5, usedDown: 6, gateway: "", openedAt: 0))
        #expect(try s.store.window(peer: "alice") == SessionWindow(peer: "alice", allowedUntil: 900, reconnectAt: 3600, usedUp: 5, usedDown: 6))
    }
}
