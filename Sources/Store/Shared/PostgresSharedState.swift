import Core

/// The shared state on PostgreSQL (`Store = postgresql://…`, docs/scale-out.md).
///
/// Tables are prefixed `tv_` (schema in `SharedSchema`). A window is one row per peer; every
/// write takes a new number from the sequence `tv_change`, so other gateways poll
/// `WHERE change > $cursor`. History rows are keyed `(gateway, id)`: shipping again updates.
///
/// One connection; used by one thread at a time (the daemon opens one per thread).
public final class PostgresSharedState: SharedState {
    public var backend: String { "postgresql" }
    /// The connection (tests and benchmarks run their own statements on it).
    public let connection: PGConnection

    static let windowColumns = "peer, epoch, allowed_until, reconnect_at, used_up, used_down, gateway, opened_at"

    /// Connects to `conninfo` and brings the schema up to date (gateways starting together apply
    /// each migration once: it runs under a transaction-level advisory lock).
    public init(conninfo: String, timeoutMs: Int = 5_000) throws {
        connection = try PGConnection(conninfo: conninfo, timeoutMs: timeoutMs)
        try PostgresSchema.migrate(connection)
    }

    /// Connects to `conninfo` to read (tunnelctl): no migration, no writes (the session is
    /// `default_transaction_read_only`); a database no gateway has opened yet, or one of another
    /// schema version, is an error that says so.
    public init(readingOnly conninfo: String, timeoutMs: Int = 5_000) throws {
        connection = try PGConnection(conninfo: conninfo, timeoutMs: timeoutMs)
        try connection.execute("SET default_transaction_read_only = on", operation: "open the shared store")
        let has = try connection.execute("SELECT to_regclass('tv_schema') IS NOT NULL", operation: "open the shared store")
        let found = has.text(0, 0) == "t"
            ? Int(try connection.execute("SELECT coalesce(max(version), 0) FROM tv_schema", operation: "open the shared store").int64(0, 0)) : 0
        guard found == PostgresSchema.currentVersion else {
            throw StoreError.postgres(operation: "open the shared store",
                                      message: found == 0 ? "it holds no TunnelVision tables yet (no gateway has opened it)"
                                          : "its schema version \(found) is not this build's (\(PostgresSchema.currentVersion)); \(found > PostgresSchema.currentVersion ? "upgrade TunnelVision" : "start a gateway of this version once to migrate it")",
                                      sqlstate: "", transient: false)
        }
    }

    /// A state over an open connection (its schema already migrated, or migrated now).
    public init(connection: PGConnection) throws {
        self.connection = connection
        try PostgresSchema.migrate(connection)
    }

    private static func window(_ r: PGResult, _ i: Int = 0) -> SharedWindow {
        SharedWindow(peer: r.text(i, 0) ?? "", epoch: r.int64(i, 1),
                     dates: WindowDates(allowedUntil: r.int64(i, 2), reconnectAt: r.int64(i, 3)),
                     usedUp: UInt64(max(0, r.int64(i, 4))), usedDown: UInt64(max(0, r.int64(i, 5))),
                     gateway: r.text(i, 6) ?? "", openedAt: r.int64(i, 7))
    }

    // MARK: Windows

    public func openWindow(peer: String, dates: WindowDates, gateway: String, now: Int64) throws -> WindowOpen {
        // The one atomic statement: a window opens only when none is stored or the stored pause
        // is over. Racing gateways serialise on the row; the loser's WHERE is false.
        let r = try connection.execute("""
            INSERT INTO tv_windows AS w (\(Self.windowColumns), change)
            VALUES ($1, 1, $2, $3, 0, 0, $4, $5, nextval('tv_change'))
            ON CONFLICT (peer) DO UPDATE SET epoch = w.epoch + 1, allowed_until = EXCLUDED.allowed_until,
                reconnect_at = EXCLUDED.reconnect_at, used_up = 0, used_down = 0, gateway = EXCLUDED.gateway,
                opened_at = EXCLUDED.opened_at, change = nextval('tv_change')
            WHERE w.reconnect_at <= $5
            RETURNING \(Self.windowColumns)
            """, [peer, "\(dates.allowedUntil)", "\(dates.reconnectAt)", gateway, "\(now)"], name: "tv_open", operation: "open a window")
        if !r.rows.isEmpty { return WindowOpen(window: Self.window(r), opened: true) }
        // Not opened: the window in force (committed by whoever holds it; a new statement sees it).
        guard let stored = try window(peer: peer) else {
            throw StoreError.postgres(operation: "open a window", message: "the window of \(peer) vanished while it was opened",
                                      sqlstate: "", transient: true)
        }
        return WindowOpen(window: stored, opened: false)
    }

    @discardableResult
    public func updateWindow(peer: String, epoch: Int64, dates: WindowDates) throws -> SharedWindow? {
        let r = try connection.execute("""
            UPDATE tv_windows SET allowed_until = $3, reconnect_at = $4, change = nextval('tv_change')
            WHERE peer = $1 AND epoch = $2 RETURNING \(Self.windowColumns)
            """, [peer, "\(epoch)", "\(dates.allowedUntil)", "\(dates.reconnectAt)"], name: "tv_move", operation: "move a window")
        return r.rows.isEmpty ? try window(peer: peer) : Self.window(r)
    }

    public func addUse(peer: String, epoch: Int64, up: UInt64, down: UInt64) throws -> SharedWindow? {
        let r = try connection.execute("""
            UPDATE tv_windows SET used_up = used_up + $3, used_down = used_down + $4, change = nextval('tv_change')
            WHERE peer = $1 AND epoch = $2 RETURNING \(Self.windowColumns)
            """, [peer, "\(epoch)", "\(Int64(clamping: up))", "\(Int64(clamping: down))"], name: "tv_use", operation: "add quota use")
        return r.rows.isEmpty ? nil : Self.window(r)
    }

    public func reconcile(_ w: SharedWindow, now: Int64) throws -> SharedWindow {
        try connection.transaction("reconcile a window") {
            let r = try connection.execute("SELECT \(Self.windowColumns) FROM tv_windows WHERE peer = $1 FOR UPDATE", [w.peer],
                                           operation: "reconcile a window")
            let stored = r.rows.isEmpty ? nil : Self.window(r)
            let (next, store) = SharedWindow.reconciled(stored: stored, offered: w, now: now)
            guard store else { return next }
            try connection.execute("""
                INSERT INTO tv_windows AS w (\(Self.windowColumns), change) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, nextval('tv_change'))
                ON CONFLICT (peer) DO UPDATE SET epoch = EXCLUDED.epoch, allowed_until = EXCLUDED.allowed_until,
                    reconnect_at = EXCLUDED.reconnect_at, used_up = EXCLUDED.used_up, used_down = EXCLUDED.used_down,
                    gateway = EXCLUDED.gateway, opened_at = EXCLUDED.opened_at, change = nextval('tv_change')
                """, [next.peer, "\(next.epoch)", "\(next.dates.allowedUntil)", "\(next.dates.reconnectAt)",
                      "\(Int64(clamping: next.usedUp))", "\(Int64(clamping: next.usedDown))", next.gateway, "\(next.openedAt)"],
                operation: "reconcile a window")
            return next
        }
    }

    public func window(peer: String) throws -> SharedWindow? {
        let r = try connection.execute("SELECT \(Self.windowColumns) FROM tv_windows WHERE peer = $1", [peer], name: "tv_window",
                                       operation: "read a window")
        return r.rows.isEmpty ? nil : Self.window(r)
    }

    public func windows(changedAfter since: Int64) throws -> (windows: [SharedWindow], latest: Int64) {
        let r = try connection.execute("SELECT \(Self.windowColumns), change FROM tv_windows WHERE change > $1 ORDER BY change",
                                       ["\(since)"], name: "tv_windows", operation: "read changed windows")
        var latest = since
        var out: [SharedWindow] = []
        out.reserveCapacity(r.rows.count)
        for i in r.rows.indices {
            out.append(Self.window(r, i))
            latest = max(latest, r.int64(i, 8))
        }
        return (out, latest)
    }

    @discardableResult
    public func deleteWindow(peer: String) throws -> Bool {
        try connection.execute("DELETE FROM tv_windows WHERE peer = $1", [peer], operation: "delete a window").affected > 0
    }

    // MARK: Tiers

    public func setTier(peer: String, tier: PeerTier?, at: Int64) throws {
        try connection.execute("""
            INSERT INTO tv_tiers AS t (peer, tier, changed_at, change) VALUES ($1, $2, $3, nextval('tv_change'))
            ON CONFLICT (peer) DO UPDATE SET tier = EXCLUDED.tier, changed_at = EXCLUDED.changed_at, change = nextval('tv_change')
            """, [peer, tier?.rawValue, "\(at)"], name: "tv_tier", operation: "set a tier")
    }

    public func tiers(changedAfter since: Int64) throws -> (changes: [SharedTierChange], latest: Int64) {
        let r = try connection.execute("""
            SELECT peer, tier, changed_at, change FROM tv_tiers WHERE change > $1 AND ($1 > 0 OR tier IS NOT NULL) ORDER BY change
            """, ["\(since)"], name: "tv_tiers", operation: "read changed tiers")
        var latest = since
        var out: [SharedTierChange] = []
        for i in r.rows.indices {
            out.append(SharedTierChange(peer: r.text(i, 0) ?? "", tier: r.text(i, 1).flatMap(PeerTier.init(rawValue:)), changedAt: r.int64(i, 2)))
            latest = max(latest, r.int64(i, 3))
        }
        // A since-0 read that skipped cleared rows still moves the cursor past them.
        if since == 0, let m = try connection.execute("SELECT coalesce(max(change), 0) FROM tv_tiers").rows.first?.first {
            latest = max(latest, m.flatMap { Int64($0) } ?? 0)
        }
        return (out, latest)
    }

    // MARK: Admission

    public func setAdmission(_ a: SharedAdmission) throws {
        try connection.execute("""
            INSERT INTO tv_admission AS t (peer, disabled, expires_at, changed_at, gateway, change)
            VALUES ($1, $2, $3, $4, $5, nextval('tv_change'))
            ON CONFLICT (peer) DO UPDATE SET disabled = EXCLUDED.disabled, expires_at = EXCLUDED.expires_at,
                changed_at = EXCLUDED.changed_at, gateway = EXCLUDED.gateway, change = nextval('tv_change')
            """, [a.peer, a.disabled ? "1" : "0", a.expiresAt.map { "\($0)" }, "\(a.changedAt)", a.gateway], name: "tv_admit",
            operation: "share a peer's admission")
    }

    public func admissions(changedAfter since: Int64) throws -> (changes: [SharedAdmission], latest: Int64) {
        let r = try connection.execute("""
            SELECT peer, disabled, expires_at, changed_at, gateway, change FROM tv_admission WHERE change > $1 ORDER BY change
            """, ["\(since)"], name: "tv_admissions", operation: "read changed admissions")
        var latest = since
        var out: [SharedAdmission] = []
        for i in r.rows.indices {
            out.append(SharedAdmission(peer: r.text(i, 0) ?? "", disabled: r.int64(i, 1) != 0, expiresAt: r.text(i, 2).flatMap { Int64($0) },
                                       changedAt: r.int64(i, 3), gateway: r.text(i, 4) ?? ""))
            latest = max(latest, r.int64(i, 5))
        }
        return (out, latest)
    }

    // MARK: Settings

    public func settings() throws -> SharedSettings? {
        let r = try connection.execute("SELECT json, changed_at, gateway, change FROM tv_settings WHERE id = 1", name: "tv_settings",
                                       operation: "read the shared settings")
        return r.rows.isEmpty ? nil : SharedSettings(text: r.text(0, 0) ?? "", changedAt: r.int64(0, 1), gateway: r.text(0, 2) ?? "",
                                                     change: r.int64(0, 3))
    }

    public func setSettings(text: String, gateway: String, at: Int64, ifChange: Int64?) throws -> SharedSettings? {
        let sql: String
        switch ifChange {
        case nil:
            sql = """
                INSERT INTO tv_settings AS t (id, json, changed_at, gateway, change) VALUES (1, $1, $2, $3, nextval('tv_change'))
                ON CONFLICT (id) DO UPDATE SET json = EXCLUDED.json, changed_at = EXCLUDED.changed_at, gateway = EXCLUDED.gateway,
                    change = nextval('tv_change')
                RETURNING json, changed_at, gateway, change
                """
        case 0?:  // only the first row: a row that came in between wins, ON CONFLICT stores nothing
            sql = """
                INSERT INTO tv_settings (id, json, changed_at, gateway, change) VALUES (1, $1, $2, $3, nextval('tv_change'))
                ON CONFLICT (id) DO NOTHING
                RETURNING json, changed_at, gateway, change
                """
        case let expected?:  // a racing UPDATE waits for the row lock, then sees the new change and matches nothing
            sql = """
                UPDATE tv_settings SET json = $1, changed_at = $2, gateway = $3, change = nextval('tv_change')
                WHERE id = 1 AND change = \(expected)
                RETURNING json, changed_at, gateway, change
                """
        }
        let r = try connection.execute(sql, [text, "\(at)", gateway], operation: "store the shared settings")
        guard !r.rows.isEmpty else { return nil }
        return SharedSettings(text: r.text(0, 0) ?? "", changedAt: r.int64(0, 1), gateway: r.text(0, 2) ?? "", change: r.int64(0, 3))
    }

    // MARK: History

    public func ship(_ batch: HistoryBatch) throws {
        guard batch.count > 0 else { return }
        do {
            try ship(batch, trustNew: true)
        } catch let StoreError.postgres(_, _, sqlstate, _) where sqlstate == "23505" {
            // A row the batch calls new is there: the batch shipped before and its acknowledge
            // was lost (a crash). Everything again, upserted: the same rows, once.
            try ship(batch, trustNew: false)
        }
    }

    private func ship(_ batch: HistoryBatch, trustNew: Bool) throws {
        let new = trustNew ? batch.new : HistoryCounts()
        try connection.transaction("ship history") {
            if !batch.flows.isEmpty { try shipFlows(batch.gateway, batch.flows, new: Int(new.flows)) }
            if !batch.sessions.isEmpty { try shipSessions(batch.gateway, batch.sessions, new: Int(new.sessions)) }
            if !batch.refusals.isEmpty { try shipRefusals(batch.gateway, batch.refusals, new: Int(new.refusals)) }
            if !batch.markers.isEmpty { try shipMarkers(batch.gateway, batch.markers, new: Int(new.markers)) }
        }
    }

    /// The last row per id (an upsert may touch a row once per statement).
    private static func lastPerID<T>(_ rows: ArraySlice<T>, _ id: (T) -> Int64) -> [T] {
        var seen = Set<Int64>()
        var out: [T] = []
        for r in rows.reversed() where seen.insert(id(r)).inserted { out.append(r) }
        return out.reversed()
    }

    /// One family's rows: the first `new` (inserted since the last batch) go in with COPY
    /// straight into the table; the others are COPYed into a temporary staging table of this
    /// connection (emptied at commit) and upserted from it in one statement. COPY's text format
    /// costs the least per row on both ends (docs/scale-out.md "History"; `tunnelbench shared`).
    private func shipRows<T>(_ table: String, _ columns: String, _ all: [T], new: Int, id: (T) -> Int64,
                             onConflict: String, operation: String, row: (inout PGCopyRows, T) -> Void) throws
    {
        let new = min(max(0, new), all.count)
        if new > 0 {
            var rows = PGCopyRows(reserve: new * 160)
            for r in all[..<new] {
                row(&rows, r)
                rows.endRow()
            }
            try connection.copyIn("COPY \(table) (\(columns)) FROM STDIN", rows, operation: operation)
        }
        guard new < all.count else { return }
        let changed = Self.lastPerID(all[new...], id)
        var rows = PGCopyRows(reserve: changed.count * 160)
        for r in changed {
            row(&rows, r)
            rows.endRow()
        }
        let stage = "tv_stage_" + table.dropFirst(3)
        try connection.execute("CREATE TEMP TABLE IF NOT EXISTS \(stage) (LIKE \(table) INCLUDING DEFAULTS) ON COMMIT DELETE ROWS",
                               operation: operation)
        try connection.copyIn("COPY \(stage) (\(columns)) FROM STDIN", rows, operation: operation)
        try connection.execute("""
            INSERT INTO \(table) AS t (\(columns)) SELECT \(columns) FROM \(stage)
            ON CONFLICT (gateway, id) DO UPDATE SET \(onConflict)
            """, operation: operation)
    }

    private func shipFlows(_ gateway: String, _ flows: [Flow], new: Int) throws {
        try shipRows("tv_flows", """
            gateway, id, proto, src_addr, src_port, dst_addr, dst_port, peer, host, first_seen, last_seen, \
            bytes_out, bytes_in, packets_out, packets_in, verdict, rule, closed_at, close_reason, \
            rule_name, reason, tier, generation
            """, flows, new: new, id: \.id, onConflict: """
            last_seen = greatest(t.last_seen, EXCLUDED.last_seen), bytes_out = EXCLUDED.bytes_out, \
            bytes_in = EXCLUDED.bytes_in, packets_out = EXCLUDED.packets_out, packets_in = EXCLUDED.packets_in, \
            host = coalesce(EXCLUDED.host, t.host), verdict = EXCLUDED.verdict, rule = EXCLUDED.rule, \
            closed_at = EXCLUDED.closed_at, close_reason = EXCLUDED.close_reason, rule_name = EXCLUDED.rule_name, \
            reason = EXCLUDED.reason, tier = EXCLUDED.tier, generation = EXCLUDED.generation
            """, operation: "ship flows") { rows, f in
            rows.add(gateway); rows.add(f.id); rows.add(Int64(f.proto)); rows.add("\(f.src)"); rows.add(Int64(f.srcPort))
            rows.add("\(f.dst)"); rows.add(Int64(f.dstPort)); rows.add(f.peer); rows.add(f.host); rows.add(f.firstSeen); rows.add(f.lastSeen)
            rows.add(Int64(clamping: f.counters.bytesOut)); rows.add(Int64(clamping: f.counters.bytesIn))
            rows.add(Int64(clamping: f.counters.packetsOut)); rows.add(Int64(clamping: f.counters.packetsIn))
            rows.add(f.verdict.name); rows.add(f.rule); rows.add(f.closedAt); rows.add(f.closeReason)
            rows.add(f.decision?.name); rows.add(f.decision?.reason); rows.add(f.decision?.tier)
            rows.add(f.decision.map { Int64(truncatingIfNeeded: $0.generation) })
        }
    }

    private func shipSessions(_ gateway: String, _ sessions: [Session], new: Int) throws {
        try shipRows("tv_sessions", "gateway, id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes", sessions, new: new, id: \.id,
                     onConflict: """
            ended_at = EXCLUDED.ended_at, end_reason = EXCLUDED.end_reason, rx_bytes = EXCLUDED.rx_bytes, tx_bytes = EXCLUDED.tx_bytes
            """, operation: "ship sessions") { rows, x in
            rows.add(gateway); rows.add(x.id); rows.add(x.peer); rows.add(x.startedAt); rows.add(x.endedAt); rows.add(x.endReason?.rawValue)
            rows.add(x.rxBytes); rows.add(x.txBytes)
        }
    }

    private func shipRefusals(_ gateway: String, _ refusals: [Refusal], new: Int) throws {
        try shipRows("tv_refusals", "gateway, id, kind, peer, rule, flow_key, reason, window_at, count, first_at, last_at, host, rule_name, tier, generation", refusals,
                     new: new, id: \.id,
                     onConflict: "count = EXCLUDED.count, last_at = EXCLUDED.last_at, reason = EXCLUDED.reason, host = EXCLUDED.host",
                     operation: "ship refusals") { rows, r in
            rows.add(gateway); rows.add(r.id); rows.add(r.kind.rawValue); rows.add(r.peer); rows.add(r.rule); rows.add(r.flowKey)
            rows.add(r.reason); rows.add(r.window); rows.add(r.count); rows.add(r.firstAt); rows.add(r.lastAt); rows.add(r.host)
            rows.add(r.decision?.name); rows.add(r.decision?.tier); rows.add(Int64(truncatingIfNeeded: r.decision?.generation ?? 0))
        }
    }

    private func shipMarkers(_ gateway: String, _ markers: [Marker], new: Int) throws {
        try shipRows("tv_markers", "gateway, id, at, label, kind, detail", markers, new: new, id: \.id,
                     onConflict: "label = EXCLUDED.label, detail = EXCLUDED.detail", operation: "ship markers") { rows, m in
            rows.add(gateway); rows.add(m.id); rows.add(m.at); rows.add(m.label); rows.add(m.kind.rawValue); rows.add(m.detail)
        }
    }

    public func historyCounts(gateway: String?) throws -> HistoryCounts {
        let r = try connection.execute("""
            SELECT (SELECT count(*) FROM tv_flows WHERE $1::text IS NULL OR gateway = $1),
                   (SELECT count(*) FROM tv_sessions WHERE $1::text IS NULL OR gateway = $1),
                   (SELECT count(*) FROM tv_refusals WHERE $1::text IS NULL OR gateway = $1),
                   (SELECT count(*) FROM tv_markers WHERE $1::text IS NULL OR gateway = $1)
            """, [gateway], operation: "count history")
        return HistoryCounts(flows: r.int64(0, 0), sessions: r.int64(0, 1), refusals: r.int64(0, 2), markers: r.int64(0, 3))
    }

    @discardableResult
    public func pruneHistory(cutoffs: HistoryCutoffs, batch: Int) throws -> HistoryCounts {
        var gone = HistoryCounts()
        let batch = max(1, batch)
        for t in cutoffs.targets {
            while true {
                // Bounded: one statement of at most `batch` rows (its own transaction), so
                // gateways shipping meanwhile never wait long on these rows.
                let n = try connection.execute(
                    "DELETE FROM \(t.table) WHERE ctid IN (SELECT ctid FROM \(t.table) WHERE \(t.column) < $1 LIMIT $2)",
                    ["\(t.before)", "\(batch)"], operation: "prune \(t.table)").affected
                gone[keyPath: t.count] += Int64(n)
                if n < batch { break }
            }
        }
        return gone
    }
}

/// The PostgreSQL side of `SharedSchema` (`tv_schema` holds the version applied).
public enum PostgresSchema {
    static let lockKey = 0x7476_5f73_6368  // "tv_sch": one advisory lock for migrations

    /// The version this build writes.
    public static var currentVersion: Int { SharedSchema.currentVersion }

    /// Applies the missing migrations, each once even when gateways start together. Throws when
    /// the database's schema is newer than this build.
    public static func migrate(_ c: PGConnection) throws {
        try c.transaction("migrate the schema") {
            try c.execute("SELECT pg_advisory_xact_lock(\(lockKey))", operation: "migrate the schema")
            try c.execute("CREATE TABLE IF NOT EXISTS tv_schema (version INT NOT NULL)", operation: "migrate the schema")
            let r = try c.execute("SELECT coalesce(max(version), 0) FROM tv_schema", operation: "migrate the schema")
            let found = Int(r.int64(0, 0))
            if found > currentVersion {
                throw StoreError.postgres(operation: "open the shared store",
                                          message: "its schema version \(found) is newer than this build understands (\(currentVersion)); upgrade TunnelVision",
                                          sqlstate: "", transient: false)
            }
            for v in (found + 1)...max(found + 1, currentVersion) where v <= currentVersion {
                for statement in SharedSchema.sql(version: v, for: .postgresql) {
                    try c.execute(statement, operation: "migrate the schema to version \(v)")
                }
                try c.execute("INSERT INTO tv_schema (version) VALUES ($1)", ["\(v)"], operation: "migrate the schema")
            }
        }
    }
}
