import Core

/// The shared state on PostgreSQL (`Store = postgresql://…`, issue 19, docs/scale-out.md).
///
/// Tables are prefixed `tv_` (schema in `PostgresSchema`). A window is one row per peer; every
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
            if let s = stored, s.dates.reconnectAt > now, s.openedAt <= w.openedAt { return s }
            var next = w
            next.epoch = (stored?.epoch ?? 0) + 1
            if let s = stored, s.dates.reconnectAt > now {  // the later window loses; its use counts in the winner
                next.usedUp &+= s.usedUp
                next.usedDown &+= s.usedDown
            }
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

    // MARK: History

    public func ship(_ batch: HistoryBatch) throws {
        guard batch.count > 0 else { return }
        try connection.transaction("ship history") {
            if !batch.flows.isEmpty { try shipFlows(batch.gateway, batch.flows) }
            if !batch.sessions.isEmpty { try shipSessions(batch.gateway, batch.sessions) }
            if !batch.refusals.isEmpty { try shipRefusals(batch.gateway, batch.refusals) }
            if !batch.markers.isEmpty { try shipMarkers(batch.gateway, batch.markers) }
        }
    }

    /// The last row per id (an upsert may touch a row once per statement).
    private static func lastPerID<T>(_ rows: [T], _ id: (T) -> Int64) -> [T] {
        var seen = Set<Int64>()
        var out: [T] = []
        for r in rows.reversed() where seen.insert(id(r)).inserted { out.append(r) }
        return out.reversed()
    }

    private func shipFlows(_ gateway: String, _ all: [Flow]) throws {
        let flows = Self.lastPerID(all, \.id)
        var a = PGArrays(columns: 18)
        for f in flows {
            a.add([
                "\(f.id)", "\(f.proto)", "\(f.src)", "\(f.srcPort)", "\(f.dst)", "\(f.dstPort)", f.peer, f.host, "\(f.firstSeen)", "\(f.lastSeen)",
                "\(Int64(clamping: f.counters.bytesOut))", "\(Int64(clamping: f.counters.bytesIn))", "\(Int64(clamping: f.counters.packetsOut))",
                "\(Int64(clamping: f.counters.packetsIn))", f.verdict.name, f.rule, f.closedAt.map { "\($0)" }, f.closeReason,
            ])
        }
        try connection.execute("""
            INSERT INTO tv_flows AS f (gateway, id, proto, src_addr, src_port, dst_addr, dst_port, peer, host, first_seen, last_seen,
                bytes_out, bytes_in, packets_out, packets_in, verdict, rule, closed_at, close_reason)
            SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::inet[], $5::int[], $6::inet[], $7::int[], $8::text[], $9::text[],
                $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[], $17::text[],
                $18::bigint[], $19::text[])
            ON CONFLICT (gateway, id) DO UPDATE SET last_seen = greatest(f.last_seen, EXCLUDED.last_seen), bytes_out = EXCLUDED.bytes_out,
                bytes_in = EXCLUDED.bytes_in, packets_out = EXCLUDED.packets_out, packets_in = EXCLUDED.packets_in,
                host = coalesce(EXCLUDED.host, f.host), verdict = EXCLUDED.verdict, rule = EXCLUDED.rule,
                closed_at = EXCLUDED.closed_at, close_reason = EXCLUDED.close_reason
            """, [gateway] + a.literals, name: "tv_ship_flows", operation: "ship flows")
    }

    private func shipSessions(_ gateway: String, _ all: [Session]) throws {
        var a = PGArrays(columns: 7)
        for s in Self.lastPerID(all, \.id) {
            a.add(["\(s.id)", s.peer, "\(s.startedAt)", s.endedAt.map { "\($0)" }, s.endReason?.rawValue, "\(s.rxBytes)", "\(s.txBytes)"])
        }
        try connection.execute("""
            INSERT INTO tv_sessions AS s (gateway, id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes)
            SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::bigint[])
            ON CONFLICT (gateway, id) DO UPDATE SET ended_at = EXCLUDED.ended_at, end_reason = EXCLUDED.end_reason,
                rx_bytes = EXCLUDED.rx_bytes, tx_bytes = EXCLUDED.tx_bytes
            """, [gateway] + a.literals, name: "tv_ship_sessions", operation: "ship sessions")
    }

    private func shipRefusals(_ gateway: String, _ all: [Refusal]) throws {
        var a = PGArrays(columns: 10)
        for r in Self.lastPerID(all, \.id) {
            a.add(["\(r.id)", r.kind.rawValue, r.peer, r.rule, r.flowKey, r.reason, "\(r.window)", "\(r.count)", "\(r.firstAt)", "\(r.lastAt)"])
        }
        try connection.execute("""
            INSERT INTO tv_refusals AS r (gateway, id, kind, peer, rule, flow_key, reason, window_at, count, first_at, last_at)
            SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[],
                $10::bigint[], $11::bigint[])
            ON CONFLICT (gateway, id) DO UPDATE SET count = EXCLUDED.count, last_at = EXCLUDED.last_at, reason = EXCLUDED.reason
            """, [gateway] + a.literals, name: "tv_ship_refusals", operation: "ship refusals")
    }

    private func shipMarkers(_ gateway: String, _ all: [Marker]) throws {
        var a = PGArrays(columns: 5)
        for m in Self.lastPerID(all, \.id) { a.add(["\(m.id)", "\(m.at)", m.label, m.kind.rawValue, m.detail]) }
        try connection.execute("""
            INSERT INTO tv_markers AS m (gateway, id, at, label, kind, detail)
            SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[])
            ON CONFLICT (gateway, id) DO UPDATE SET label = EXCLUDED.label, detail = EXCLUDED.detail
            """, [gateway] + a.literals, name: "tv_ship_markers", operation: "ship markers")
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
    public func pruneHistory(before: Int64, batch: Int) throws -> Int {
        let targets = [("tv_flows", "last_seen < $1"), ("tv_sessions", "ended_at < $1"), ("tv_refusals", "last_at < $1"), ("tv_markers", "at < $1")]
        var total = 0
        for (table, condition) in targets {
            while true {
                let n = try connection.execute(
                    "DELETE FROM \(table) WHERE ctid IN (SELECT ctid FROM \(table) WHERE \(condition) LIMIT $2)",
                    ["\(before)", "\(max(1, batch))"], operation: "prune \(table)").affected
                total += n
                if n < batch { break }
            }
        }
        return total
    }
}

/// Column arrays as PostgreSQL array literals (`{"a","b",NULL}`), one parameter per column, so
/// a whole batch goes in one statement (`unnest`).
struct PGArrays {
    private var columns: [String]
    private var first = true

    init(columns n: Int) { columns = Array(repeating: "{", count: n) }

    mutating func add(_ values: [String?]) {
        for (i, v) in values.enumerated() {
            if !first { columns[i].append(",") }
            guard let v else {
                columns[i].append("NULL")
                continue
            }
            columns[i].append("\"")
            for ch in v.unicodeScalars {
                if ch == "\"" || ch == "\\" { columns[i].append("\\") }
                columns[i].unicodeScalars.append(ch)
            }
            columns[i].append("\"")
        }
        first = false
    }

    var literals: [String?] { columns.map { $0 + "}" } }
}

/// The PostgreSQL schema as numbered migrations (`tv_schema` holds the version applied).
public enum PostgresSchema {
    static let lockKey = 0x7476_5f73_6368  // "tv_sch": one advisory lock for migrations

    /// All migrations in order; `migrations[i]` produces version `i + 1`.
    static let migrations: [String] = [
        """
        CREATE SEQUENCE tv_change;
        CREATE TABLE tv_windows (
            peer TEXT PRIMARY KEY,
            epoch BIGINT NOT NULL,
            allowed_until BIGINT NOT NULL,
            reconnect_at BIGINT NOT NULL,
            used_up BIGINT NOT NULL DEFAULT 0,
            used_down BIGINT NOT NULL DEFAULT 0,
            gateway TEXT NOT NULL,
            opened_at BIGINT NOT NULL,
            change BIGINT NOT NULL DEFAULT nextval('tv_change')
        );
        CREATE INDEX tv_windows_change ON tv_windows (change);
        CREATE TABLE tv_tiers (
            peer TEXT PRIMARY KEY,
            tier TEXT CHECK (tier IS NULL OR length(tier) BETWEEN 1 AND 32),
            changed_at BIGINT NOT NULL,
            change BIGINT NOT NULL DEFAULT nextval('tv_change')
        );
        CREATE INDEX tv_tiers_change ON tv_tiers (change);
        CREATE TABLE tv_flows (
            gateway TEXT NOT NULL, id BIGINT NOT NULL, proto INT NOT NULL, src_addr INET NOT NULL, src_port INT NOT NULL,
            dst_addr INET NOT NULL, dst_port INT NOT NULL, peer TEXT NOT NULL, host TEXT, first_seen BIGINT NOT NULL,
            last_seen BIGINT NOT NULL, bytes_out BIGINT NOT NULL, bytes_in BIGINT NOT NULL, packets_out BIGINT NOT NULL,
            packets_in BIGINT NOT NULL, verdict TEXT NOT NULL, rule TEXT, closed_at BIGINT, close_reason TEXT,
            PRIMARY KEY (gateway, id)
        );
        CREATE INDEX tv_flows_last_seen ON tv_flows (last_seen);
        CREATE INDEX tv_flows_peer_last_seen ON tv_flows (peer, last_seen);
        CREATE TABLE tv_sessions (
            gateway TEXT NOT NULL, id BIGINT NOT NULL, peer TEXT NOT NULL, started_at BIGINT NOT NULL, ended_at BIGINT,
            end_reason TEXT, rx_bytes BIGINT NOT NULL, tx_bytes BIGINT NOT NULL, PRIMARY KEY (gateway, id)
        );
        CREATE INDEX tv_sessions_started_at ON tv_sessions (started_at);
        CREATE INDEX tv_sessions_ended_at ON tv_sessions (ended_at);
        CREATE TABLE tv_refusals (
            gateway TEXT NOT NULL, id BIGINT NOT NULL, kind TEXT NOT NULL, peer TEXT NOT NULL, rule TEXT NOT NULL, flow_key TEXT NOT NULL,
            reason TEXT NOT NULL, window_at BIGINT NOT NULL, count BIGINT NOT NULL, first_at BIGINT NOT NULL, last_at BIGINT NOT NULL,
            PRIMARY KEY (gateway, id)
        );
        CREATE INDEX tv_refusals_last_at ON tv_refusals (last_at);
        CREATE TABLE tv_markers (
            gateway TEXT NOT NULL, id BIGINT NOT NULL, at BIGINT NOT NULL, label TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT,
            PRIMARY KEY (gateway, id)
        );
        CREATE INDEX tv_markers_at ON tv_markers (at);
        """,
    ]

    /// The version this build writes.
    public static var currentVersion: Int { migrations.count }

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
                try c.execute(migrations[v - 1], operation: "migrate the schema to version \(v)")
                try c.execute("INSERT INTO tv_schema (version) VALUES ($1)", ["\(v)"], operation: "migrate the schema")
            }
        }
    }
}
