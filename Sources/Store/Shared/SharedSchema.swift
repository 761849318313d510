/// The shared store's schema, described once, so both backends migrate from one description. Each version is a list of steps; `sql(version:for:)` renders a version for
/// PostgreSQL or SQLite, and both `PostgresSchema.migrate` and `SQLiteSharedState` apply what it
/// renders. `tables` is the schema the last version leaves, which the tests compare with each
/// backend's catalogue.
///
/// Dialect differences are in the renderer only: PostgreSQL numbers changes with the sequence
/// `tv_change` (column default `nextval`); SQLite has no sequences, so it keeps the counter in a
/// one-row table that each writing transaction bumps (writers are serialised by the database
/// lock). `INET` is PostgreSQL's address type; SQLite stores the same text.
public enum SharedSchema {
    /// A column's type, as both backends spell it.
    public enum ColumnType: Sendable {
        case text, bigint, int, inet
    }

    /// A column default.
    public enum Default: Sendable {
        case zero
        /// The empty string (a text column added to a table that has rows).
        case empty
        /// The next change number (PostgreSQL; SQLite statements set it).
        case change
    }

    /// One column.
    public struct Column: Sendable {
        public var name: String
        public var type: ColumnType
        public var notNull: Bool
        public var defaultValue: Default?
        /// A CHECK expression both dialects accept.
        public var check: String?

        init(_ name: String, _ type: ColumnType, notNull: Bool = true, default defaultValue: Default? = nil, check: String? = nil) {
            self.name = name
            self.type = type
            self.notNull = notNull
            self.defaultValue = defaultValue
            self.check = check
        }
    }

    /// One table.
    public struct Table: Sendable {
        public var name: String
        public var columns: [Column]
        public var primaryKey: [String]
    }

    /// One migration step.
    public enum Step: Sendable {
        /// The change counter (a sequence; a one-row table on SQLite).
        case counter(String)
        case table(Table)
        case index(name: String, table: String, columns: [String])
        case dropIndex(String)
        /// A column added to an existing table (`ALTER TABLE … ADD COLUMN`; NOT NULL needs a default).
        case addColumn(table: String, Column)
    }

    /// The SQL dialect to render.
    public enum Dialect: Sendable {
        case postgresql, sqlite
    }

    /// The change counter's name.
    public static let changeCounter = "tv_change"

    static func history(_ name: String, _ columns: [Column]) -> Table {
        Table(name: name, columns: [Column("gateway", .text), Column("id", .bigint)] + columns, primaryKey: ["gateway", "id"])
    }

    /// Every version in order: `versions[i]` produces version `i + 1`. Never edit a released
    /// version; add one.
    public static let versions: [[Step]] = [
        [
            .counter(changeCounter),
            .table(Table(name: "tv_windows", columns: [
                Column("peer", .text), Column("epoch", .bigint), Column("allowed_until", .bigint), Column("reconnect_at", .bigint),
                Column("used_up", .bigint, default: .zero), Column("used_down", .bigint, default: .zero), Column("gateway", .text),
                Column("opened_at", .bigint), Column("change", .bigint, default: .change),
            ], primaryKey: ["peer"])),
            .index(name: "tv_windows_change", table: "tv_windows", columns: ["change"]),
            .table(Table(name: "tv_tiers", columns: [
                Column("peer", .text), Column("tier", .text, notNull: false, check: "tier IS NULL OR length(tier) BETWEEN 1 AND 32"),
                Column("changed_at", .bigint), Column("change", .bigint, default: .change),
            ], primaryKey: ["peer"])),
            .index(name: "tv_tiers_change", table: "tv_tiers", columns: ["change"]),
            .table(history("tv_flows", [
                Column("proto", .int), Column("src_addr", .inet), Column("src_port", .int), Column("dst_addr", .inet),
                Column("dst_port", .int), Column("peer", .text), Column("host", .text, notNull: false), Column("first_seen", .bigint),
                Column("last_seen", .bigint), Column("bytes_out", .bigint), Column("bytes_in", .bigint), Column("packets_out", .bigint),
                Column("packets_in", .bigint), Column("verdict", .text), Column("rule", .text, notNull: false),
                Column("closed_at", .bigint, notNull: false), Column("close_reason", .text, notNull: false),
            ])),
            .index(name: "tv_flows_last_seen", table: "tv_flows", columns: ["last_seen"]),
            .index(name: "tv_flows_peer_last_seen", table: "tv_flows", columns: ["peer", "last_seen"]),
            .table(history("tv_sessions", [
                Column("peer", .text), Column("started_at", .bigint), Column("ended_at", .bigint, notNull: false),
                Column("end_reason", .text, notNull: false), Column("rx_bytes", .bigint), Column("tx_bytes", .bigint),
            ])),
            .index(name: "tv_sessions_started_at", table: "tv_sessions", columns: ["started_at"]),
            .index(name: "tv_sessions_ended_at", table: "tv_sessions", columns: ["ended_at"]),
            .table(history("tv_refusals", [
                Column("kind", .text), Column("peer", .text), Column("rule", .text), Column("flow_key", .text), Column("reason", .text),
                Column("window_at", .bigint), Column("count", .bigint), Column("first_at", .bigint), Column("last_at", .bigint),
            ])),
            .index(name: "tv_refusals_last_at", table: "tv_refusals", columns: ["last_at"]),
            .table(history("tv_markers", [
                Column("at", .bigint), Column("label", .text), Column("kind", .text), Column("detail", .text, notNull: false),
            ])),
            .index(name: "tv_markers_at", table: "tv_markers", columns: ["at"]),
        ],
        // 2: history at rate (tunnelbench shared): the (peer, last_seen) index cost about a
        // quarter of every flow insert and no statement of ours reads it; prune uses last_seen.
        [.dropIndex("tv_flows_peer_last_seen")],
        // 3: Disabled / Expires shared: the latest change made on any gateway applies on all.
        [
            .table(Table(name: "tv_admission", columns: [
                Column("peer", .text), Column("disabled", .int, check: "disabled IN (0, 1)"), Column("expires_at", .bigint, notNull: false),
                Column("changed_at", .bigint), Column("gateway", .text), Column("change", .bigint, default: .change),
            ], primaryKey: ["peer"])),
            .index(name: "tv_admission_change", table: "tv_admission", columns: ["change"]),
        ],
        // 4: the host a refused flow was known by, wherever a refusal shows.
        [.addColumn(table: "tv_refusals", Column("host", .text, default: .empty))],
        // 5: retention shared: one row, the retention section of the
        // settings row's JSON, the change number and time, and the gateway that made it. Capture
        // stays in each gateway's own state.db (its pcap files are local).
        [
            .table(Table(name: "tv_settings", columns: [
                Column("id", .int, check: "id = 1"), Column("json", .text), Column("changed_at", .bigint), Column("gateway", .text),
                Column("change", .bigint, default: .change),
            ], primaryKey: ["id"])),
        ],
        // 6: a flow or refusal keeps the decision as it was taken (policy generation, rule name,
        // reason, tier), so no reload re-attributes a shipped row. NULL / 0: not recorded.
        [
            .addColumn(table: "tv_flows", Column("rule_name", .text, notNull: false)),
            .addColumn(table: "tv_flows", Column("reason", .text, notNull: false)),
            .addColumn(table: "tv_flows", Column("tier", .text, notNull: false)),
            .addColumn(table: "tv_flows", Column("generation", .bigint, notNull: false)),
            .addColumn(table: "tv_refusals", Column("rule_name", .text, notNull: false)),
            .addColumn(table: "tv_refusals", Column("tier", .text, notNull: false)),
            .addColumn(table: "tv_refusals", Column("generation", .bigint, default: .zero)),
        ],
    ]

    /// The version this build writes.
    public static var currentVersion: Int { versions.count }

    /// The tables the last version leaves, in creation order.
    public static var tables: [Table] {
        var out: [Table] = []
        for step in versions.flatMap({ $0 }) {
            switch step {
            case .table(let t): out.append(t)
            case .addColumn(let table, let c):
                if let i = out.firstIndex(where: { $0.name == table }) { out[i].columns.append(c) }
            case .counter, .index, .dropIndex: break
            }
        }
        return out
    }

    /// The indexes the last version leaves: name → (table, columns).
    public static var indexes: [String: (table: String, columns: [String])] {
        var out: [String: (table: String, columns: [String])] = [:]
        for step in versions.flatMap({ $0 }) {
            switch step {
            case .index(let name, let table, let columns): out[name] = (table, columns)
            case .dropIndex(let name): out[name] = nil
            case .counter, .table, .addColumn: break
            }
        }
        return out
    }

    /// Version `version` (1-based) as SQL statements for `dialect`.
    public static func sql(version: Int, for dialect: Dialect) -> [String] {
        versions[version - 1].flatMap { sql($0, dialect) }
    }

    static func sql(_ step: Step, _ d: Dialect) -> [String] {
        switch step {
        case .counter(let name):
            switch d {
            case .postgresql: return ["CREATE SEQUENCE \(name)"]
            case .sqlite: return ["CREATE TABLE \(name) (value INTEGER NOT NULL)", "INSERT INTO \(name) (value) VALUES (0)"]
            }
        case .table(let t):
            var parts = t.columns.map { column($0, d) }
            parts.append("PRIMARY KEY (\(t.primaryKey.joined(separator: ", ")))")
            return ["CREATE TABLE \(t.name) (\n    \(parts.joined(separator: ",\n    "))\n)"]
        case .index(let name, let table, let columns):
            return ["CREATE INDEX \(name) ON \(table) (\(columns.joined(separator: ", ")))"]
        case .dropIndex(let name):
            return ["DROP INDEX IF EXISTS \(name)"]
        case .addColumn(let table, let c):
            return ["ALTER TABLE \(table) ADD COLUMN \(column(c, d))"]
        }
    }

    static func column(_ c: Column, _ d: Dialect) -> String {
        var s = c.name + " "
        switch (c.type, d) {
        case (.text, _): s += "TEXT"
        case (.bigint, .postgresql): s += "BIGINT"
        case (.int, .postgresql): s += "INT"
        case (.inet, .postgresql): s += "INET"
        case (.bigint, .sqlite), (.int, .sqlite): s += "INTEGER"
        case (.inet, .sqlite): s += "TEXT"
        }
        if c.notNull { s += " NOT NULL" }
        switch (c.defaultValue, d) {
        case (.zero?, _): s += " DEFAULT 0"
        case (.empty?, _): s += " DEFAULT ''"
        case (.change?, .postgresql): s += " DEFAULT nextval('\(changeCounter)')"
        case (.change?, .sqlite), (nil, _): break
        }
        if let check = c.check { s += " CHECK (\(check))" }
        return s
    }
}
