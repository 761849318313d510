import Core

/// The store protocol over this router's own `state.db` (`Store = local`, the default):
/// the same questions `PostgresSharedState` and `SQLiteSharedState` answer for many gateways,
/// answered by the one router's store in its own file format (schema v7: `session_windows`,
/// `peer_tiers`, `settings`, the history tables). Both binaries reach every backend the same way
/// (`SharedStoreSetting.backend`), so `tunnelctl session`, `explain`, `retention`, the history
/// commands and `prune`, and the daemon's prune schedule, have one code path for every `Store =`.
///
/// What one router does not have, it says so rather than pretend:
/// - **Change numbers.** One router has one writer and no other gateway to poll it, so the local
///   store keeps none: `windows(changedAfter:)` and `tiers(changedAfter:)` answer the whole set
///   with `latest == 0` (a cursor of 0 again: the next call is a whole set too).
/// - **Admissions.** `Disabled` / `Expires` of a single router live in its config file (one owner;
///   `tunnelctl peer disable` rewrites it): `admissions` answers none, `setAdmission` throws.
/// - **Shipping.** The local store is where history is recorded; nothing ships into it
///   (`ship` throws). Its `historyCounts` and `pruneHistory` are this router's rows.
///
/// The watchdog's durable window writes (`WindowLedger`) go to the same rows through
/// `StateStore.putWindow`, which keeps `epoch`, `opened_at` and `gateway` as `openWindow` does.
/// One connection, one thread at a time.
public final class LocalSharedState: SharedState {
    public var backend: String { "local" }
    /// The store.
    public let store: StateStore
    /// This router's `GatewayName` (the settings row's `gateway`; windows record their own).
    public let gateway: String
    var connection: Connection { store.connection }

    static let windowColumns = PostgresSharedState.windowColumns

    /// The protocol over `store`, for the router named `gateway`.
    public init(store: StateStore, gateway: String) {
        self.store = store
        self.gateway = gateway
    }

    /// Opens (`readOnly`: never creates or migrates) the store at `path`.
    public convenience init(path: String, gateway: String, readOnly: Bool = false, busyTimeoutMs: Int = 5_000) throws {
        let store = try StateStore(path: path, mode: readOnly ? .readOnly : .readWrite, busyTimeoutMs: busyTimeoutMs)
        self.init(store: store, gateway: gateway)
    }

    static func window(_ s: Statement) -> SharedWindow { SQLiteSharedState.window(s) }

    private func vanished(_ peer: String, _ operation: String) -> StoreError {
        StoreError.sqlite(path: connection.path, operation: operation, code: 1, message: "the window of \(peer) vanished")
    }

    // MARK: Windows

    public func openWindow(peer: String, dates: WindowDates, gateway: String, now: Int64) throws -> WindowOpen {
        try connection.transaction {
            let s = try connection.prepared("""
                INSERT INTO session_windows AS w (\(Self.windowColumns)) VALUES (?1, 1, ?2, ?3, 0, 0, ?4, ?5)
                ON CONFLICT (peer) DO UPDATE SET epoch = w.epoch + 1, allowed_until = excluded.allowed_until,
                    reconnect_at = excluded.reconnect_at, used_up = 0, used_down = 0, gateway = excluded.gateway,
                    opened_at = excluded.opened_at
                WHERE w.reconnect_at <= ?5
                RETURNING \(Self.windowColumns)
                """)
            s.bind(1, peer)
            s.bind(2, dates.allowedUntil)
            s.bind(3, dates.reconnectAt)
            s.bind(4, gateway)
            s.bind(5, now)
            let opened = try s.step() ? Self.window(s) : nil
            s.reset()
            if let opened { return WindowOpen(window: opened, opened: true) }
            guard let stored = try window(peer: peer) else { throw vanished(peer, "open a window") }
            return WindowOpen(window: stored, opened: false)
        }
    }

    @discardableResult
    public func updateWindow(peer: String, epoch: Int64, dates: WindowDates) throws -> SharedWindow? {
        try connection.transaction {
            let s = try connection.prepared("""
                UPDATE session_windows SET allowed_until = ?3, reconnect_at = ?4 WHERE peer = ?1 AND epoch = ?2
                RETURNING \(Self.windowColumns)
                """)
            s.bind(1, peer)
            s.bind(2, epoch)
            s.bind(3, dates.allowedUntil)
            s.bind(4, dates.reconnectAt)
            let moved = try s.step() ? Self.window(s) : nil
            s.reset()
            return try moved ?? window(peer: peer)
        }
    }

    public func addUse(peer: String, epoch: Int64, up: UInt64, down: UInt64) throws -> SharedWindow? {
        let s = try connection.prepared("""
            UPDATE session_windows SET used_up = used_up + ?3, used_down = used_down + ?4 WHERE peer = ?1 AND epoch = ?2
            RETURNING \(Self.windowColumns)
            """)
        defer { s.reset() }
        s.bind(1, peer)
        s.bind(2, epoch)
        s.bind(3, Int64(clamping: up))
        s.bind(4, Int64(clamping: down))
        return try s.step() ? Self.window(s) : nil
    }

    public func reconcile(_ w: SharedWindow, now: Int64) throws -> SharedWindow {
        try connection.transaction {
            let (next, store) = SharedWindow.reconciled(stored: try window(peer: w.peer), offered: w, now: now)
            guard store else { return next }
            let s = try connection.prepared("""
                INSERT INTO session_windows (\(Self.windowColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                ON CONFLICT (peer) DO UPDATE SET epoch = excluded.epoch, allowed_until = excluded.allowed_until,
                    reconnect_at = excluded.reconnect_at, used_up = excluded.used_up, used_down = excluded.used_down,
                    gateway = excluded.gateway, opened_at = excluded.opened_at
                """)
            s.bind(1, next.peer)
            s.bind(2, next.epoch)
            s.bind(3, next.dates.allowedUntil)
            s.bind(4, next.dates.reconnectAt)
            s.bind(5, Int64(clamping: next.usedUp))
            s.bind(6, Int64(clamping: next.usedDown))
            s.bind(7, next.gateway)
            s.bind(8, next.openedAt)
            try s.run()
            return next
        }
    }

    public func window(peer: String) throws -> SharedWindow? {
        let s = try connection.prepared("SELECT \(Self.windowColumns) FROM session_windows WHERE peer = ?1")
        defer { s.reset() }
        s.bind(1, peer)
        return try s.step() ? Self.window(s) : nil
    }

    /// Every stored window (`latest == 0`: the local store keeps no change numbers).
    public func windows(changedAfter since: Int64) throws -> (windows: [SharedWindow], latest: Int64) {
        let s = try connection.prepared("SELECT \(Self.windowColumns) FROM session_windows ORDER BY peer")
        defer { s.reset() }
        var out: [SharedWindow] = []
        while try s.step() { out.append(Self.window(s)) }
        return (out, 0)
    }

    @discardableResult
    public func deleteWindow(peer: String) throws -> Bool { try store.deleteWindow(peer: peer) }

    // MARK: Tiers

    public func setTier(peer: String, tier: PeerTier?, at: Int64) throws {
        if let tier { try store.setTier(peer: peer, tier: tier, at: at) } else { try store.clearTier(peer: peer) }
    }

    /// Every override in force (`latest == 0`: no change numbers; a cleared one is absent).
    public func tiers(changedAfter since: Int64) throws -> (changes: [SharedTierChange], latest: Int64) {
        (try store.tierOverrides().map { SharedTierChange(peer: $0.peer, tier: $0.tier, changedAt: $0.changedAt) }, 0)
    }

    // MARK: Admission

    /// One router's `Disabled` / `Expires` are its config file's; the store holds none.
    public func setAdmission(_ a: SharedAdmission) throws {
        throw StoreError.sqlite(path: connection.path, operation: "store the admission of \(a.peer)", code: 1,
                                message: "with Store = local the config file holds Disabled and Expires (tunnelctl peer disable|enable|expire rewrites it)")
    }

    /// None (see `setAdmission`).
    public func admissions(changedAfter since: Int64) throws -> (changes: [SharedAdmission], latest: Int64) { ([], 0) }

    // MARK: Settings

    /// The local settings row's retention section (`Settings.sharedJSON`) — the part a shared
    /// store shares — stored at `updated_at` by this router. Nil when there is no row. A row that
    /// is not JSON throws `settingsNotJSON`, as `StateStore.settings()` does.
    public func settings() throws -> SharedSettings? {
        guard let text = try store.settingsText() else { return nil }
        let d = try Settings.decode(text)
        let at = try connection.scalarInt("SELECT updated_at FROM settings WHERE id = 1") ?? 0
        return SharedSettings(text: d.settings.sharedJSON, changedAt: at, gateway: gateway, change: 0)
    }

    /// Replaces the retention section of the local row with `text`'s (capture is kept), in one
    /// transaction. `ifChange` holds always: the row has no change numbers (0), and its one
    /// router's writers serialise on the store's write lock.
    public func setSettings(text: String, gateway: String, at: Int64, ifChange: Int64?) throws -> SharedSettings? {
        let shared = try Settings.decodeShared(text).settings
        return try connection.transaction {
            let local = (try? store.settings().settings) ?? Settings.factory
            try store.putSettings(local.withRetention(of: shared), at: at)
            return SharedSettings(text: shared.sharedJSON, changedAt: at, gateway: gateway, change: 0)
        }
    }

    // MARK: History

    /// Nothing ships into the store history is recorded in.
    public func ship(_ batch: HistoryBatch) throws {
        throw StoreError.sqlite(path: connection.path, operation: "ship history from \(batch.gateway)", code: 1,
                                message: "the local store records this router's history itself; only a shared store (Store = postgresql://… or sqlite:/…) takes shipped rows")
    }

    /// This router's rows (`gateway` other than its own: none).
    public func historyCounts(gateway: String?) throws -> HistoryCounts {
        if let gateway, gateway != self.gateway { return HistoryCounts() }
        return try connection.read {
            func count(_ table: String) throws -> Int64 { try connection.scalarInt("SELECT count(*) FROM \(table)") ?? 0 }
            return HistoryCounts(flows: try count("flows"), sessions: try count("sessions"), refusals: try count("refusals"),
                                 markers: try count("markers"))
        }
    }

    /// Deletes rows older than `cutoffs` with the local prune's due-conditions (`Pruner.target`:
    /// open sessions, markers of an open audit session stay), at most `batch` rows per
    /// transaction. Ended audit sessions are the local `Pruner`'s (they have no cut-off here).
    @discardableResult
    public func pruneHistory(cutoffs: HistoryCutoffs, batch: Int) throws -> HistoryCounts {
        var out = HistoryCounts()
        let families: [(PruneFamily, Int64?, WritableKeyPath<HistoryCounts, Int64>)] = [
            (.flows, cutoffs.flows, \.flows), (.sessions, cutoffs.sessions, \.sessions),
            (.refusals, cutoffs.refusals, \.refusals), (.markers, cutoffs.markers, \.markers),
        ]
        for (family, cutoff, count) in families {
            guard let cutoff else { continue }
            let (table, condition) = Pruner.target(family)
            let delete = "DELETE FROM \(table) WHERE rowid IN (SELECT rowid FROM \(table) WHERE \(condition) LIMIT ?2)"
            while true {
                let n: Int = try connection.transaction {
                    let s = try connection.prepared(delete)
                    s.bind(1, cutoff)
                    s.bind(2, Int64(max(1, batch)))
                    try s.run()
                    return connection.changes
                }
                out[keyPath: count] += Int64(n)
                if n < max(1, batch) { break }
            }
        }
        return out
    }

    // MARK: HistoryReading (this router's rows, `gateway == nil`)

    public func historyFlows(since: Int64, peer: String?, gateway: String?, blockedOnly: Bool, limit: Int) throws -> [Gatewayed<Flow>] {
        if let gateway, gateway != self.gateway { return [] }
        return try store.historyFlows(since: since, peer: peer, gateway: nil, blockedOnly: blockedOnly, limit: limit)
    }

    public func historyRefusals(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Refusal>] {
        if let gateway, gateway != self.gateway { return [] }
        return try store.historyRefusals(since: since, peer: peer, gateway: nil, limit: limit)
    }

    public func historySessions(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Session>] {
        if let gateway, gateway != self.gateway { return [] }
        return try store.historySessions(since: since, peer: peer, gateway: nil, limit: limit)
    }

    public func historyMarkers(since: Int64, gateway: String?, limit: Int) throws -> [Gatewayed<Marker>] {
        if let gateway, gateway != self.gateway { return [] }
        return try store.historyMarkers(since: since, gateway: nil, limit: limit)
    }

    public func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try connection.read(body) }
}
