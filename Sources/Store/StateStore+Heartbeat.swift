import Core
/// The daemon's liveness row, for crash recovery.
extension StateStore {
    /// Records a daemon start (pid, time); also its first heartbeat.
    public func daemonStarted(pid: Int64, at: Int64) throws {
        let s = try connection.prepared("""
            INSERT INTO daemon_state (id, pid, started_at, heartbeat_at, dropped_records) VALUES (1, ?1, ?2, ?2, 0)
            ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, started_at = excluded.started_at,
              heartbeat_at = excluded.heartbeat_at, dropped_records = 0
            """)
        s.bind(1, pid)
        s.bind(2, at)
        try s.run()
    }

    /// Moves the heartbeat forward to `at` (never backwards); with `droppedRecords`, also
    /// records the writer's drop count (so `tunnelctl status` can show it from the store).
    public func heartbeat(at: Int64, droppedRecords: Int64? = nil) throws {
        let s = try connection.prepared("""
            INSERT INTO daemon_state (id, pid, started_at, heartbeat_at, dropped_records) VALUES (1, 0, ?1, ?1, coalesce(?2, 0))
            ON CONFLICT (id) DO UPDATE SET heartbeat_at = max(heartbeat_at, excluded.heartbeat_at),
              dropped_records = coalesce(?2, dropped_records)
            """)
        s.bind(1, at)
        s.bind(2, droppedRecords)
        try s.run()
    }

    /// Sets the heartbeat to `at`, also backwards: after the wall clock stepped back, so a restart
    /// compares the clock with a heartbeat on the same clock (docs/session.md, "Across a restart").
    public func moveHeartbeat(to at: Int64) throws {
        let s = try connection.prepared("UPDATE daemon_state SET heartbeat_at = ?1 WHERE id = 1")
        s.bind(1, at)
        try s.run()
    }

    /// The heartbeat row, or nil before the first daemon start.
    public func daemonState() throws -> DaemonState? {
        let s = try connection.prepared("SELECT pid, started_at, heartbeat_at, dropped_records FROM daemon_state WHERE id = 1")
        defer { s.reset() }
        return try s.step() ? DaemonState(pid: s.int64(0), startedAt: s.int64(1), heartbeatAt: s.int64(2), droppedRecords: s.int64(3)) : nil
    }

    /// The last moment the previous daemon provably ran: the latest of its heartbeat, the newest
    /// flow activity, session start/end and marker. nil when the store holds none of these.
    public func lastProvenAlive() throws -> Int64? {
        try connection.scalarInt("""
            SELECT max(coalesce((SELECT heartbeat_at FROM daemon_state WHERE id = 1), -9223372036854775808),
                       coalesce((SELECT max(last_seen) FROM flows), -9223372036854775808),
                       coalesce((SELECT max(started_at) FROM sessions), -9223372036854775808),
                       coalesce((SELECT max(ended_at) FROM sessions), -9223372036854775808),
                       coalesce((SELECT max(at) FROM markers WHERE kind = 'automatic'), -9223372036854775808))
            """).flatMap { $0 == .min ? nil : $0 }
    }
}
