import Core
/// Sessions and free-tier windows (docs/session.md).
extension StateStore {
    static let sessionColumns = "id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes"

    /// Opens a session for `peer` at `at`; returns its id.
    @discardableResult
    public func openSession(peer: String, at: Int64) throws -> Int64 {
        let s = try connection.prepared("INSERT INTO sessions (peer, started_at) VALUES (?, ?)")
        s.bind(1, peer)
        s.bind(2, at)
        try s.run()
        return connection.lastInsertRowid
    }

    /// Closes `peer`'s open session(s); returns how many rows were closed (0 when none open).
    @discardableResult
    public func closeSession(_ c: SessionClose) throws -> Int {
        let s = try connection.prepared("""
            UPDATE sessions SET ended_at = max(started_at, ?2), end_reason = ?3, rx_bytes = ?4, tx_bytes = ?5
            WHERE peer = ?1 AND ended_at IS NULL
            """)
        s.bind(1, c.peer)
        s.bind(2, c.at)
        s.bind(3, c.reason.rawValue)
        s.bind(4, Int64(truncatingIfNeeded: c.rxBytes))
        s.bind(5, Int64(truncatingIfNeeded: c.txBytes))
        try s.run()
        return connection.changes
    }

    /// Sessions still open (no end), oldest first.
    public func openSessions() throws -> [Session] {
        try sessionRows("SELECT \(StateStore.sessionColumns) FROM sessions WHERE ended_at IS NULL ORDER BY started_at, id", [])
    }

    /// Sessions that were open at or after `since` (started or ended then, or still open),
    /// newest first, optionally one peer's.
    public func sessions(since: Int64 = .min, peer: String? = nil, limit: Int = 10_000) throws -> [Session] {
        var sql = "SELECT \(StateStore.sessionColumns) FROM sessions WHERE (ended_at IS NULL OR ended_at >= ?1)"
        if peer != nil { sql += " AND peer = ?2" }
        sql += " ORDER BY started_at DESC, id DESC LIMIT ?3"
        let s = try connection.prepared(sql)
        defer { s.reset() }
        s.bind(1, since)
        if let peer { s.bind(2, peer) }
        s.bind(3, Int64(limit))
        var out: [Session] = []
        while try s.step() { out.append(StateStore.session(from: s)) }
        return out
    }

    /// Crash recovery: closes every open session with reason `crash` at `at` (never before its
    /// start). Returns how many were closed. `at` is normally `lastProvenAlive()`.
    @discardableResult
    public func closeAllOpenSessionsAsCrash(at: Int64) throws -> Int {
        try connection.transaction {
            let s = try connection.prepared(
                "UPDATE sessions SET ended_at = max(started_at, ?1), end_reason = 'crash' WHERE ended_at IS NULL")
            s.bind(1, at)
            try s.run()
            return connection.changes
        }
    }

    /// Crash recovery for flows: every flow row still open (no `closed_at`) is closed with reason
    /// `crash` at `at` (never before its last packet). Returns how many were closed.
    @discardableResult
    public func closeAllOpenFlowsAsCrash(at: Int64) throws -> Int {
        try connection.transaction {
            let s = try connection.prepared(
                "UPDATE flows SET closed_at = max(last_seen, ?1), close_reason = 'crash' WHERE closed_at IS NULL")
            s.bind(1, at)
            try s.run()
            return connection.changes
        }
    }

    /// Rows still open: (sessions, flows), for recovery checks and `status`.
    public func openRowCounts() throws -> (sessions: Int64, flows: Int64) {
        let sessions = try connection.scalarInt("SELECT count(*) FROM sessions WHERE ended_at IS NULL") ?? 0
        let flows = try connection.scalarInt("SELECT count(*) FROM flows WHERE closed_at IS NULL") ?? 0
        return (sessions, flows)
    }

    private func sessionRows(_ sql: String, _ binds: [Int64]) throws -> [Session] {
        let s = try connection.prepared(sql)
        defer { s.reset() }
        for (i, v) in binds.enumerated() { s.bind(Int32(i + 1), v) }
        var out: [Session] = []
        while try s.step() { out.append(StateStore.session(from: s)) }
        return out
    }

    static func session(from s: Statement) -> Session {
        Session(id: s.int64(0), peer: s.text(1), startedAt: s.int64(2), endedAt: s.optionalInt64(3),
                endReason: s.optionalText(4).flatMap(SessionEndReason.init(rawValue:)), rxBytes: s.int64(5), txBytes: s.int64(6))
    }

    // MARK: - Windows

    /// `peer`'s stored window, or nil.
    public func window(peer: String) throws -> SessionWindow? {
        let s = try connection.prepared("SELECT peer, allowed_until, reconnect_at, used_up, used_down FROM session_windows WHERE peer = ?")
        defer { s.reset() }
        s.bind(1, peer)
        return try s.step() ? SessionWindow(peer: s.text(0), allowedUntil: s.int64(1), reconnectAt: s.int64(2), usedUp: UInt64(max(0, s.int64(3))), usedDown: UInt64(max(0, s.int64(4)))) : nil
    }

    /// Every stored window, by peer name.
    public func windows() throws -> [SessionWindow] {
        let s = try connection.prepared("SELECT peer, allowed_until, reconnect_at, used_up, used_down FROM session_windows ORDER BY peer")
        defer { s.reset() }
        var out: [SessionWindow] = []
        while try s.step() { out.append(SessionWindow(peer: s.text(0), allowedUntil: s.int64(1), reconnectAt: s.int64(2), usedUp: UInt64(max(0, s.int64(3))), usedDown: UInt64(max(0, s.int64(4))))) }
        return out
    }

    /// Stores (replaces) a peer's window. `opened` (the watchdog opened it at `at` on `gateway`):
    /// the peer's next window (`epoch` one more, `opened_at`, `gateway` set, as
    /// `LocalSharedState.openWindow` does); otherwise the stored window moved or its use went on,
    /// and keeps its number, opening time and gateway.
    public func putWindow(_ w: SessionWindow, opened: Bool = false, at: Int64 = 0, gateway: String = "") throws {
        let s = try connection.prepared("""
            INSERT INTO session_windows AS w (peer, allowed_until, reconnect_at, used_up, used_down, epoch, opened_at, gateway)
                VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7)
            ON CONFLICT (peer) DO UPDATE SET allowed_until = excluded.allowed_until, reconnect_at = excluded.reconnect_at,
                used_up = excluded.used_up, used_down = excluded.used_down,
                epoch = CASE WHEN ?8 THEN w.epoch + 1 ELSE w.epoch END,
                opened_at = CASE WHEN ?8 THEN excluded.opened_at ELSE w.opened_at END,
                gateway = CASE WHEN ?8 THEN excluded.gateway ELSE w.gateway END
            """)
        s.bind(1, w.peer)
        s.bind(2, w.allowedUntil)
        s.bind(3, w.reconnectAt)
        s.bind(4, Int64(clamping: w.usedUp))
        s.bind(5, Int64(clamping: w.usedDown))
        s.bind(6, at)
        s.bind(7, gateway)
        s.bind(8, Int64(opened ? 1 : 0))
        try s.run()
    }

    /// Removes a peer's window (a peer moved to premium loses it). Returns whether one existed.
    @discardableResult
    public func deleteWindow(peer: String) throws -> Bool {
        let s = try connection.prepared("DELETE FROM session_windows WHERE peer = ?")
        s.bind(1, peer)
        try s.run()
        return connection.changes > 0
    }
}
