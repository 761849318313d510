import Core

/// The shared state in one SQLite file (`Store = sqlite:/path/shared.db`): gateways on
/// one host — several `tunneld` instances on one router, a test bench — share windows, quota use,
/// tier overrides and history through it exactly as they would through PostgreSQL. Same schema
/// (`SharedSchema`, rendered for SQLite), same contract (`SharedState`), same tests.
///
/// Every write runs in `BEGIN IMMEDIATE`, so writers from several processes serialise on the
/// database lock; that is what makes `openWindow` atomic here (one statement inside it). Change
/// numbers come from the one-row table `tv_change`, bumped in the writing transaction.
///
/// One connection; used by one thread at a time (the daemon opens one per thread).
public final class SQLiteSharedState: SharedState {
    public var backend: String { "sqlite" }
    /// The connection (tests run their own statements on it).
    public let connection: Connection

    static let windowColumns = PostgresSharedState.windowColumns

    /// Opens (`.readWrite`: creates) the file at `path` and brings its schema up to date; several
    /// gateways opening it together apply each version once (the migration holds the write lock).
    /// `.readOnly` never creates or migrates, and refuses a file older or newer than this build.
    public init(path: String, mode: Connection.Mode = .readWrite, busyTimeoutMs: Int = 5_000) throws {
        connection = try Connection(path: path, mode: mode, busyTimeoutMs: busyTimeoutMs)
        try migrate(readOnly: mode == .readOnly)
    }

    private func migrate(readOnly: Bool) throws {
        let operation = "open the shared store \(connection.path)"
        if readOnly {
            let has = try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'tv_schema'") ?? 0
            let found = has > 0 ? Int(try connection.scalarInt("SELECT coalesce(max(version), 0) FROM tv_schema") ?? 0) : 0
            guard found == SharedSchema.currentVersion else {
                throw StoreError.sqlite(path: connection.path, operation: operation, code: 1,
                                        message: found == 0 ? "it holds no shared store yet (no gateway has opened it)"
                                            : "its schema version \(found) is not this build's (\(SharedSchema.currentVersion)); \(found > SharedSchema.currentVersion ? "upgrade TunnelVision" : "start a gateway of this version once to migrate it")")
            }
            return
        }
        try connection.transaction {
            try connection.execute("CREATE TABLE IF NOT EXISTS tv_schema (version INTEGER NOT NULL)")
            let found = Int(try connection.scalarInt("SELECT coalesce(max(version), 0) FROM tv_schema") ?? 0)
            if found > SharedSchema.currentVersion {
                throw StoreError.sqlite(path: connection.path, operation: operation, code: 1,
                                        message: "its schema version \(found) is newer than this build understands (\(SharedSchema.currentVersion)); upgrade TunnelVision")
            }
            var v = found + 1
            while v <= SharedSchema.currentVersion {
                for statement in SharedSchema.sql(version: v, for: .sqlite) { try connection.execute(statement) }
                try connection.execute("INSERT INTO tv_schema (version) VALUES (\(v))")
                v += 1
            }
        }
    }

    /// The next change number (inside the caller's write transaction).
    private func nextChange() throws -> Int64 {
        let s = try connection.prepared("UPDATE tv_change SET value = value + 1 RETURNING value")
        defer { s.reset() }
        guard try s.step() else {
            throw StoreError.sqlite(path: connection.path, operation: "number a change", code: 1, message: "tv_change is empty")
        }
        return s.int64(0)
    }

    /// A `windowColumns` row (both SQLite implementations read windows with it).
    static func window(_ s: Statement) -> SharedWindow {
        SharedWindow(peer: s.text(0), epoch: s.int64(1), dates: WindowDates(allowedUntil: s.int64(2), reconnectAt: s.int64(3)),
                     usedUp: UInt64(max(0, s.int64(4))), usedDown: UInt64(max(0, s.int64(5))), gateway: s.text(6), openedAt: s.int64(7))
    }

    // MARK: Windows

    public func openWindow(peer: String, dates: WindowDates, gateway: String, now: Int64) throws -> WindowOpen {
        try connection.transaction {
            let change = try nextChange()
            let s = try connection.prepared("""
                INSERT INTO tv_windows AS w (\(Self.windowColumns), change) VALUES (?1, 1, ?2, ?3, 0, 0, ?4, ?5, ?6)
                ON CONFLICT (peer) DO UPDATE SET epoch = w.epoch + 1, allowed_until = excluded.allowed_until,
                    reconnect_at = excluded.reconnect_at, used_up = 0, used_down = 0, gateway = excluded.gateway,
                    opened_at = excluded.opened_at, change = excluded.change
                WHERE w.reconnect_at <= ?5
                RETURNING \(Self.windowColumns)
                """)
            s.bind(1, peer)
            s.bind(2, dates.allowedUntil)
            s.bind(3, dates.reconnectAt)
            s.bind(4, gateway)
            s.bind(5, now)
            s.bind(6, change)
            let opened = try s.step() ? Self.window(s) : nil
            s.reset()
            if let opened { return WindowOpen(window: opened, opened: true) }
            guard let stored = try window(peer: peer) else {
                throw StoreError.sqlite(path: connection.path, operation: "open a window", code: 1, message: "the window of \(peer) vanished")
            }
            return WindowOpen(window: stored, opened: false)
        }
    }

    @discardableResult
    public func updateWindow(peer: String, epoch: Int64, dates: WindowDates) throws -> SharedWindow? {
        try connection.transaction {
            let change = try nextChange()
            let s = try connection.prepared("""
                UPDATE tv_windows SET allowed_until = ?3, reconnect_at = ?4, change = ?5 WHERE peer = ?1 AND epoch = ?2
                RETURNING \(Self.windowColumns)
                """)
            s.bind(1, peer)
            s.bind(2, epoch)
            s.bind(3, dates.allowedUntil)
            s.bind(4, dates.reconnectAt)
            s.bind(5, change)
            let moved = try s.step() ? Self.window(s) : nil
            s.reset()
            return try moved ?? window(peer: peer)
        }
    }

    public func addUse(peer: String, epoch: Int64, up: UInt64, down: UInt64) throws -> SharedWindow? {
        try connection.transaction {
            let change = try nextChange()
            let s = try connection.prepared("""
                UPDATE tv_windows SET used_up = used_up + ?3, used_down = used_down + ?4, change = ?5 WHERE peer = ?1 AND epoch = ?2
                RETURNING \(Self.windowColumns)
                """)
            defer { s.reset() }
            s.bind(1, peer)
            s.bind(2, epoch)
            s.bind(3, Int64(clamping: up))
            s.bind(4, Int64(clamping: down))
            s.bind(5, change)
            return try s.step() ? Self.window(s) : nil
        }
    }

    public func reconcile(_ w: SharedWindow, now: Int64) throws -> SharedWindow {
        try connection.transaction {
            let stored = try window(peer: w.peer)
            let (next, store) = SharedWindow.reconciled(stored: stored, offered: w, now: now)
            guard store else { return next }
            let change = try nextChange()
            let s = try connection.prepared("""
                INSERT INTO tv_windows (\(Self.windowColumns), change) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                ON CONFLICT (peer) DO UPDATE SET epoch = excluded.epoch, allowed_until = excluded.allowed_until,
                    reconnect_at = excluded.reconnect_at, used_up = excluded.used_up, used_down = excluded.used_down,
                    gateway = excluded.gateway, opened_at = excluded.opened_at, change = excluded.change
                """)
            s.bind(1, next.peer)
            s.bind(2, next.epoch)
            s.bind(3, next.dates.allowedUntil)
            s.bind(4, next.dates.reconnectAt)
            s.bind(5, Int64(clamping: next.usedUp))
            s.bind(6, Int64(clamping: next.usedDown))
            s.bind(7, next.gateway)
            s.bind(8, next.openedAt)
            s.bind(9, change)
            try s.run()
            return next
        }
    }

    public func window(peer: String) throws -> SharedWindow? {
        let s = try connection.prepared("SELECT \(Self.windowColumns) FROM tv_windows WHERE peer = ?1")
        defer { s.reset() }
        s.bind(1, peer)
        return try s.step() ? Self.window(s) : nil
    }

    public func windows(changedAfter since: Int64) throws -> (windows: [SharedWindow], latest: Int64) {
        let s = try connection.prepared("SELECT \(Self.windowColumns), change FROM tv_windows WHERE change > ?1 ORDER BY change")
        defer { s.reset() }
        s.bind(1, since)
        var latest = since
        var out: [SharedWindow] = []
        while try s.step() {
            out.append(Self.window(s))
            latest = max(latest, s.int64(8))
        }
        return (out, latest)
    }

    @discardableResult
    public func deleteWindow(peer: String) throws -> Bool {
        let s = try connection.prepared("DELETE FROM tv_windows WHERE peer = ?1")
        s.bind(1, peer)
        try s.run()
        return connection.changes > 0
    }

    // MARK: Tiers

    public func setTier(peer: String, tier: PeerTier?, at: Int64) throws {
        try connection.transaction {
            let change = try nextChange()
            let s = try connection.prepared("""
                INSERT INTO tv_tiers (peer, tier, changed_at, change) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (peer) DO UPDATE SET tier = excluded.tier, changed_at = excluded.changed_at, change = excluded.change
                """)
            s.bind(1, peer)
            s.bind(2, tier?.rawValue)
            s.bind(3, at)
            s.bind(4, change)
            try s.run()
        }
    }

    public func tiers(changedAfter since: Int64) throws -> (changes: [SharedTierChange], latest: Int64) {
        try connection.read {
            let s = try connection.prepared("""
                SELECT peer, tier, changed_at, change FROM tv_tiers WHERE change > ?1 AND (?1 > 0 OR tier IS NOT NULL) ORDER BY change
                """)
            defer { s.reset() }
            s.bind(1, since)
            var latest = since
            var out: [SharedTierChange] = []
            while try s.step() {
                out.append(SharedTierChange(peer: s.text(0), tier: s.optionalText(1).flatMap(PeerTier.init(rawValue:)), changedAt: s.int64(2)))
                latest = max(latest, s.int64(3))
            }
            // A since-0 read that skipped cleared rows still moves the cursor past them.
            if since == 0 { latest = max(latest, try connection.scalarInt("SELECT coalesce(max(change), 0) FROM tv_tiers") ?? 0) }
            return (out, latest)
        }
    }

    // MARK: Admission

    public func setAdmission(_ a: SharedAdmission) throws {
        try connection.transaction {
            let change = try nextChange()
            let s = try connection.prepared("""
                INSERT INTO tv_admission (peer, disabled, expires_at, changed_at, gateway, change) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT (peer) DO UPDATE SET disabled = excluded.disabled, expires_at = excluded.expires_at,
                    changed_at = excluded.changed_at, gateway = excluded.gateway, change = excluded.change
                """)
            s.bind(1, a.peer)
            s.bind(2, Int64(a.disabled ? 1 : 0))
            s.bind(3, a.expiresAt)
            s.bind(4, a.changedAt)
            s.bind(5, a.gateway)
            s.bind(6, change)
            try s.run()
        }
    }

    public func admissions(changedAfter since: Int64) throws -> (changes: [SharedAdmission], latest: Int64) {
        let s = try connection.prepared("""
            SELECT peer, disabled, expires_at, changed_at, gateway, change FROM tv_admission WHERE change > ?1 ORDER BY change
            """)
        defer { s.reset() }
        s.bind(1, since)
        var latest = since
        var out: [SharedAdmission] = []
        while try s.step() {
            out.append(SharedAdmission(peer: s.text(0), disabled: s.int64(1) != 0, expiresAt: s.optionalInt64(2), changedAt: s.int64(3),
                                       gateway: s.text(4)))
            latest = max(latest, s.int64(5))
        }
        return (out, latest)
    }

    // MARK: Settings

    public func settings() throws -> SharedSettings? {
        let s = try connection.prepared("SELECT json, changed_at, gateway, change FROM tv_settings WHERE id = 1")
        defer { s.reset() }
        return try s.step() ? SharedSettings(text: s.text(0), changedAt: s.int64(1), gateway: s.text(2), change: s.int64(3)) : nil
    }

    public func setSettings(text: String, gateway: String, at: Int64, ifChange: Int64?) throws -> SharedSettings? {
        try connection.transaction {
            // The write lock is held from here (BEGIN IMMEDIATE): the check and the write are one step.
            if let expected = ifChange, (try settings()?.change ?? 0) != expected { return nil }
            let change = try nextChange()
            let s = try connection.prepared("""
                INSERT INTO tv_settings (id, json, changed_at, gateway, change) VALUES (1, ?1, ?2, ?3, ?4)
                ON CONFLICT (id) DO UPDATE SET json = excluded.json, changed_at = excluded.changed_at, gateway = excluded.gateway,
                    change = excluded.change
                """)
            s.bind(1, text)
            s.bind(2, at)
            s.bind(3, gateway)
            s.bind(4, change)
            try s.run()
            return SharedSettings(text: text, changedAt: at, gateway: gateway, change: change)
        }
    }

    // MARK: History

    public func ship(_ batch: HistoryBatch) throws {
        guard batch.count > 0 else { return }
        let g = batch.gateway
        // SQLite's upsert costs what its insert does: every row goes in the same way, keyed
        // (gateway, id), whatever the batch calls new.
        try connection.transaction {
            if !batch.flows.isEmpty {
                let s = try connection.prepared("""
                    INSERT INTO tv_flows AS t (gateway, id, proto, src_addr, src_port, dst_addr, dst_port, peer, host, first_seen, last_seen,
                        bytes_out, bytes_in, packets_out, packets_in, verdict, rule, closed_at, close_reason,
                        rule_name, reason, tier, generation)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)
                    ON CONFLICT (gateway, id) DO UPDATE SET last_seen = max(t.last_seen, excluded.last_seen),
                        bytes_out = excluded.bytes_out, bytes_in = excluded.bytes_in, packets_out = excluded.packets_out,
                        packets_in = excluded.packets_in, host = coalesce(excluded.host, t.host), verdict = excluded.verdict,
                        rule = excluded.rule, closed_at = excluded.closed_at, close_reason = excluded.close_reason,
                        rule_name = excluded.rule_name, reason = excluded.reason, tier = excluded.tier, generation = excluded.generation
                    """)
                for f in batch.flows {
                    s.bind(1, g); s.bind(2, f.id); s.bind(3, Int64(f.proto)); s.bind(4, "\(f.src)"); s.bind(5, Int64(f.srcPort))
                    s.bind(6, "\(f.dst)"); s.bind(7, Int64(f.dstPort)); s.bind(8, f.peer); s.bind(9, f.host); s.bind(10, f.firstSeen)
                    s.bind(11, f.lastSeen); s.bind(12, Int64(clamping: f.counters.bytesOut)); s.bind(13, Int64(clamping: f.counters.bytesIn))
                    s.bind(14, Int64(clamping: f.counters.packetsOut)); s.bind(15, Int64(clamping: f.counters.packetsIn))
                    s.bind(16, f.verdict.name); s.bind(17, f.rule); s.bind(18, f.closedAt); s.bind(19, f.closeReason)
                    s.bind(20, f.decision?.name); s.bind(21, f.decision?.reason); s.bind(22, f.decision?.tier)
                    s.bind(23, f.decision.map { Int64(truncatingIfNeeded: $0.generation) })
                    try s.run()
                }
            }
            if !batch.sessions.isEmpty {
                let s = try connection.prepared("""
                    INSERT INTO tv_sessions (gateway, id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    ON CONFLICT (gateway, id) DO UPDATE SET ended_at = excluded.ended_at, end_reason = excluded.end_reason,
                        rx_bytes = excluded.rx_bytes, tx_bytes = excluded.tx_bytes
                    """)
                for x in batch.sessions {
                    s.bind(1, g); s.bind(2, x.id); s.bind(3, x.peer); s.bind(4, x.startedAt); s.bind(5, x.endedAt)
                    s.bind(6, x.endReason?.rawValue); s.bind(7, x.rxBytes); s.bind(8, x.txBytes)
                    try s.run()
                }
            }
            if !batch.refusals.isEmpty {
                let s = try connection.prepared("""
                    INSERT INTO tv_refusals (gateway, id, kind, peer, rule, flow_key, reason, window_at, count, first_at, last_at, host,
                        rule_name, tier, generation)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                    ON CONFLICT (gateway, id) DO UPDATE SET count = excluded.count, last_at = excluded.last_at, reason = excluded.reason,
                      host = excluded.host
                    """)
                for r in batch.refusals {
                    s.bind(1, g); s.bind(2, r.id); s.bind(3, r.kind.rawValue); s.bind(4, r.peer); s.bind(5, r.rule); s.bind(6, r.flowKey)
                    s.bind(7, r.reason); s.bind(8, r.window); s.bind(9, r.count); s.bind(10, r.firstAt); s.bind(11, r.lastAt)
                    s.bind(12, r.host)
                    s.bind(13, r.decision?.name); s.bind(14, r.decision?.tier); s.bind(15, Int64(truncatingIfNeeded: r.decision?.generation ?? 0))
                    try s.run()
                }
            }
            if !batch.markers.isEmpty {
                let s = try connection.prepared("""
                    INSERT INTO tv_markers (gateway, id, at, label, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                    ON CONFLICT (gateway, id) DO UPDATE SET label = excluded.label, detail = excluded.detail
                    """)
                for m in batch.markers {
                    s.bind(1, g); s.bind(2, m.id); s.bind(3, m.at); s.bind(4, m.label); s.bind(5, m.kind.rawValue); s.bind(6, m.detail)
                    try s.run()
                }
            }
        }
    }

    public func historyCounts(gateway: String?) throws -> HistoryCounts {
        try connection.read {
            func count(_ table: String) throws -> Int64 {
                let s = try connection.prepared("SELECT count(*) FROM \(table) WHERE ?1 IS NULL OR gateway = ?1")
                defer { s.reset() }
                s.bind(1, gateway)
                return try s.step() ? s.int64(0) : 0
            }
            return HistoryCounts(flows: try count("tv_flows"), sessions: try count("tv_sessions"), refusals: try count("tv_refusals"),
                                 markers: try count("tv_markers"))
        }
    }

    @discardableResult
    public func pruneHistory(cutoffs: HistoryCutoffs, batch: Int) throws -> HistoryCounts {
        var gone = HistoryCounts()
        let batch = max(1, batch)
        for t in cutoffs.targets {
            while true {
                // One bounded statement per transaction: gateways writing meanwhile wait one batch at most.
                let n = try connection.transaction {
                    let s = try connection.prepared(
                        "DELETE FROM \(t.table) WHERE rowid IN (SELECT rowid FROM \(t.table) WHERE \(t.column) < ?1 LIMIT ?2)")
                    s.bind(1, t.before)
                    s.bind(2, Int64(batch))
                    try s.run()
                    return connection.changes
                }
                gone[keyPath: t.count] += Int64(n)
                if n < batch { break }
            }
        }
        return gone
    }
}

// MARK: - Reading (HistoryReading)

extension SQLiteSharedState {
    public func historyFlows(since: Int64, peer: String?, gateway: String?, blockedOnly: Bool, limit: Int) throws -> [Gatewayed<Flow>] {
        let s = try connection.prepared("""
            SELECT gateway, id, proto, src_addr, src_port, dst_addr, dst_port, peer, host, first_seen, last_seen,
                bytes_out, bytes_in, packets_out, packets_in, verdict, rule, closed_at, close_reason,
                rule_name, reason, tier, generation FROM tv_flows
            WHERE last_seen >= ?1 AND (?2 IS NULL OR peer = ?2) AND (?3 IS NULL OR gateway = ?3)
                AND (?5 = 0 OR verdict IN ('block', 'reject'))
            ORDER BY last_seen DESC, gateway, id DESC LIMIT ?4
            """)
        defer { s.reset() }
        s.bind(1, since); s.bind(2, peer); s.bind(3, gateway); s.bind(4, Int64(max(0, limit))); s.bind(5, Int64(blockedOnly ? 1 : 0))
        var out: [Gatewayed<Flow>] = []
        while try s.step() {
            out.append(Gatewayed(gateway: s.text(0), row: Flow(
                id: s.int64(1), proto: UInt8(truncatingIfNeeded: s.int64(2)),
                src: IPAddress(s.text(3)) ?? IPAddress(v4: 0), srcPort: UInt16(truncatingIfNeeded: s.int64(4)),
                dst: IPAddress(s.text(5)) ?? IPAddress(v4: 0), dstPort: UInt16(truncatingIfNeeded: s.int64(6)),
                peer: s.text(7), host: s.optionalText(8), firstSeen: s.int64(9), lastSeen: s.int64(10),
                counters: FlowCounters(bytesOut: UInt64(truncatingIfNeeded: s.int64(11)), bytesIn: UInt64(truncatingIfNeeded: s.int64(12)),
                                       packetsOut: UInt64(truncatingIfNeeded: s.int64(13)), packetsIn: UInt64(truncatingIfNeeded: s.int64(14))),
                verdict: Verdict(name: s.text(15)) ?? .pending, rule: s.optionalText(16), capture: nil,
                closedAt: s.optionalInt64(17), closeReason: s.optionalText(18),
                decision: s.optionalText(20).flatMap { reason in
                    DecidedRule.stored(generation: s.optionalInt64(22) ?? 0, place: s.optionalText(16), name: s.optionalText(19),
                                       reason: reason, tier: s.optionalText(21))
                })))
        }
        return out
    }

    public func historyRefusals(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Refusal>] {
        let s = try connection.prepared("""
            SELECT gateway, id, kind, peer, rule, flow_key, reason, window_at, count, first_at, last_at, host,
                rule_name, tier, generation FROM tv_refusals
            WHERE last_at >= ?1 AND (?2 IS NULL OR peer = ?2) AND (?3 IS NULL OR gateway = ?3)
            ORDER BY last_at DESC, gateway, id DESC LIMIT ?4
            """)
        defer { s.reset() }
        s.bind(1, since); s.bind(2, peer); s.bind(3, gateway); s.bind(4, Int64(max(0, limit)))
        var out: [Gatewayed<Refusal>] = []
        while try s.step() {
            out.append(Gatewayed(gateway: s.text(0), row: Refusal(
                id: s.int64(1), kind: RefusalKind(rawValue: s.text(2)) ?? .flow, peer: s.text(3), rule: s.text(4), flowKey: s.text(5),
                reason: s.text(6), window: s.int64(7), count: s.int64(8), firstAt: s.int64(9), lastAt: s.int64(10), host: s.text(11),
                decision: DecidedRule.stored(generation: s.int64(14), place: s.text(4) == "default" ? nil : s.text(4),
                                             name: s.optionalText(12), reason: s.text(6), tier: s.optionalText(13)))))
        }
        return out
    }

    public func historySessions(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Session>] {
        let s = try connection.prepared("""
            SELECT gateway, id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes FROM tv_sessions
            WHERE (ended_at IS NULL OR ended_at >= ?1) AND (?2 IS NULL OR peer = ?2) AND (?3 IS NULL OR gateway = ?3)
            ORDER BY started_at DESC, gateway, id DESC LIMIT ?4
            """)
        defer { s.reset() }
        s.bind(1, since); s.bind(2, peer); s.bind(3, gateway); s.bind(4, Int64(max(0, limit)))
        var out: [Gatewayed<Session>] = []
        while try s.step() {
            out.append(Gatewayed(gateway: s.text(0), row: Session(
                id: s.int64(1), peer: s.text(2), startedAt: s.int64(3), endedAt: s.optionalInt64(4),
                endReason: s.optionalText(5).flatMap(SessionEndReason.init(rawValue:)), rxBytes: s.int64(6), txBytes: s.int64(7))))
        }
        return out
    }

    public func historyMarkers(since: Int64, gateway: String?, limit: Int) throws -> [Gatewayed<Marker>] {
        let s = try connection.prepared("""
            SELECT gateway, id, at, label, kind, detail FROM tv_markers WHERE at >= ?1 AND (?2 IS NULL OR gateway = ?2)
            ORDER BY at, gateway, id LIMIT ?3
            """)
        defer { s.reset() }
        s.bind(1, since); s.bind(2, gateway); s.bind(3, Int64(max(0, limit)))
        var out: [Gatewayed<Marker>] = []
        while try s.step() {
            out.append(Gatewayed(gateway: s.text(0), row: Marker(
                id: s.int64(1), at: s.int64(2), label: s.text(3), kind: MarkerKind(rawValue: s.text(4)) ?? .manual,
                auditSessionId: nil, detail: s.optionalText(5))))
        }
        return out
    }

    public func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try connection.read(body) }
}
