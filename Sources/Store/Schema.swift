import Core
/// The store's schema as numbered migrations (table by table in docs/store.md).
///
/// `PRAGMA user_version` holds the applied version. Whichever process opens the store first
/// applies the missing migrations, each in one `BEGIN IMMEDIATE` transaction that re-reads the
/// version inside the transaction, so two processes opening a fresh store at once apply each
/// migration exactly once (the second waits for the lock, then sees the new version and skips).
public enum Schema {
    /// One migration: the version it produces and its SQL.
    public struct Migration: Sendable {
        /// The `user_version` after this migration.
        public let version: Int
        /// What it does, for logs.
        public let summary: String
        /// The statements, run inside the migration's transaction.
        public let sql: String
    }

    /// All migrations in order; `migrations[i].version == i + 1`.
    public static let migrations: [Migration] = [v1, v2, v3, v4, v5, v6, v7, v8]

    /// The version this build writes and understands.
    public static var currentVersion: Int { migrations.count }

    /// Version 1: the base tables.
    static let v1 = Migration(version: 1, summary: "base tables", sql: """
        CREATE TABLE flows (
            id INTEGER PRIMARY KEY,
            proto INTEGER NOT NULL,
            src_addr BLOB NOT NULL,
            src_port INTEGER NOT NULL,
            dst_addr BLOB NOT NULL,
            dst_port INTEGER NOT NULL,
            peer TEXT NOT NULL,
            host TEXT,
            first_seen INTEGER NOT NULL,
            last_seen INTEGER NOT NULL,
            bytes_out INTEGER NOT NULL DEFAULT 0,
            bytes_in INTEGER NOT NULL DEFAULT 0,
            packets_out INTEGER NOT NULL DEFAULT 0,
            packets_in INTEGER NOT NULL DEFAULT 0,
            verdict TEXT NOT NULL CHECK (verdict IN ('allow', 'block', 'reject', 'pending')),
            rule TEXT,
            capture_file INTEGER,
            capture_offset INTEGER,
            closed_at INTEGER,
            close_reason TEXT
        );
        CREATE TABLE refusals (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('flow', 'session')),
            peer TEXT NOT NULL,
            rule TEXT NOT NULL DEFAULT '',
            flow_key TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '',
            window INTEGER NOT NULL,
            count INTEGER NOT NULL,
            first_at INTEGER NOT NULL,
            last_at INTEGER NOT NULL,
            UNIQUE (kind, peer, window, rule, flow_key)
        );
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            peer TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER,
            end_reason TEXT CHECK (end_reason IN ('free-limit', 'admin-kick', 'idle', 'shutdown', 'removed', 'crash')),
            rx_bytes INTEGER NOT NULL DEFAULT 0,
            tx_bytes INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE session_windows (
            peer TEXT PRIMARY KEY,
            allowed_until INTEGER NOT NULL,
            reconnect_at INTEGER NOT NULL
        );
        CREATE TABLE audit_sessions (
            id INTEGER PRIMARY KEY,
            label TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER
        );
        CREATE TABLE markers (
            id INTEGER PRIMARY KEY,
            at INTEGER NOT NULL,
            label TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('manual', 'automatic')),
            audit_session_id INTEGER REFERENCES audit_sessions(id) ON DELETE SET NULL,
            detail TEXT
        );
        CREATE TABLE peer_tiers (
            peer TEXT PRIMARY KEY,
            tier TEXT NOT NULL CHECK (tier IN ('free', 'premium')),
            changed_at INTEGER NOT NULL
        );
        CREATE TABLE settings (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            json TEXT NOT NULL,
            updated_at INTEGER NOT NULL
        );
        """)

    /// Version 2: indexes for the CLI's queries and pruning, one open audit session at most,
    /// and the daemon heartbeat row used for crash recovery.
    static let v2 = Migration(version: 2, summary: "indexes, single open audit session, daemon heartbeat", sql: """
        CREATE INDEX flows_last_seen ON flows (last_seen);
        CREATE INDEX flows_peer_last_seen ON flows (peer, last_seen);
        CREATE INDEX flows_blocked_last_seen ON flows (last_seen) WHERE verdict IN ('block', 'reject');
        CREATE INDEX refusals_last_at ON refusals (last_at);
        CREATE INDEX refusals_peer_last_at ON refusals (peer, last_at);
        CREATE INDEX sessions_started_at ON sessions (started_at);
        CREATE INDEX sessions_peer_started_at ON sessions (peer, started_at);
        CREATE INDEX sessions_ended_at ON sessions (ended_at) WHERE ended_at IS NOT NULL;
        CREATE INDEX sessions_open ON sessions (peer) WHERE ended_at IS NULL;
        CREATE INDEX markers_at ON markers (at);
        CREATE INDEX markers_audit ON markers (audit_session_id);
        CREATE INDEX audit_sessions_started_at ON audit_sessions (started_at);
        CREATE UNIQUE INDEX audit_sessions_one_open ON audit_sessions ((ended_at IS NULL)) WHERE ended_at IS NULL;
        CREATE TABLE daemon_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            pid INTEGER NOT NULL,
            started_at INTEGER NOT NULL,
            heartbeat_at INTEGER NOT NULL,
            dropped_records INTEGER NOT NULL DEFAULT 0
        );
        """)

    /// Version 3: sessions may end `disabled` (the peer was disabled) or `expired` (its `Expires`
    /// passed). SQLite cannot change a CHECK in place: the table is rebuilt, rows and indexes kept.
    static let v3 = Migration(version: 3, summary: "session end reasons disabled and expired", sql: """
        CREATE TABLE sessions_v3 (
            id INTEGER PRIMARY KEY,
            peer TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER,
            end_reason TEXT CHECK (end_reason IN ('free-limit', 'admin-kick', 'idle', 'shutdown', 'removed', 'crash',
                                                  'disabled', 'expired')),
            rx_bytes INTEGER NOT NULL DEFAULT 0,
            tx_bytes INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO sessions_v3 (id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes)
            SELECT id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes FROM sessions;
        DROP TABLE sessions;
        ALTER TABLE sessions_v3 RENAME TO sessions;
        CREATE INDEX sessions_started_at ON sessions (started_at);
        CREATE INDEX sessions_peer_started_at ON sessions (peer, started_at);
        CREATE INDEX sessions_ended_at ON sessions (ended_at) WHERE ended_at IS NOT NULL;
        CREATE INDEX sessions_open ON sessions (peer) WHERE ended_at IS NULL;
        """)

    /// Version 4: a window counts the bytes used in it (`used_up`: sent by the peer,
    /// `used_down`: received), sessions may end `quota`, and a tier may be any configured name
    /// (`[Tier NAME]`), so `peer_tiers` loses its free/premium CHECK. Tables rebuilt, rows kept.
    static let v4 = Migration(version: 4, summary: "window byte use, end reason quota, any tier name", sql: """
        ALTER TABLE session_windows ADD COLUMN used_up INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE session_windows ADD COLUMN used_down INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE sessions_v4 (
            id INTEGER PRIMARY KEY,
            peer TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            ended_at INTEGER,
            end_reason TEXT CHECK (end_reason IN ('free-limit', 'admin-kick', 'idle', 'shutdown', 'removed', 'crash',
                                                  'disabled', 'expired', 'quota')),
            rx_bytes INTEGER NOT NULL DEFAULT 0,
            tx_bytes INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO sessions_v4 (id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes)
            SELECT id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes FROM sessions;
        DROP TABLE sessions;
        ALTER TABLE sessions_v4 RENAME TO sessions;
        CREATE INDEX sessions_started_at ON sessions (started_at);
        CREATE INDEX sessions_peer_started_at ON sessions (peer, started_at);
        CREATE INDEX sessions_ended_at ON sessions (ended_at) WHERE ended_at IS NOT NULL;
        CREATE INDEX sessions_open ON sessions (peer) WHERE ended_at IS NULL;
        CREATE TABLE peer_tiers_v4 (
            peer TEXT PRIMARY KEY,
            tier TEXT NOT NULL CHECK (length(tier) BETWEEN 1 AND 32),
            changed_at INTEGER NOT NULL
        );
        INSERT INTO peer_tiers_v4 (peer, tier, changed_at) SELECT peer, tier, changed_at FROM peer_tiers;
        DROP TABLE peer_tiers;
        ALTER TABLE peer_tiers_v4 RENAME TO peer_tiers;
        """)

    /// Version 5: the history journal for a shared store. While `ship_target` holds a
    /// row (the daemon writes it when `Store =` names a shared store), every insert or update of
    /// a flow, session, refusal or marker row appends (family, row id, inserted?) to `ship_queue`, whose
    /// AUTOINCREMENT `seq` orders the changes; the daemon ships them in `seq` order and deletes
    /// what the shared store took (`StateStore+Journal.swift`). Without a target nothing is
    /// queued: a single-router store only gains two empty tables. A later migration that rebuilds
    /// one of these tables must create its triggers again.
    static let v5 = Migration(version: 5, summary: "history journal for a shared store", sql: """
        CREATE TABLE ship_target (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            gateway TEXT NOT NULL,
            since INTEGER NOT NULL
        );
        CREATE TABLE ship_queue (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            family INTEGER NOT NULL,
            row_id INTEGER NOT NULL,
            inserted INTEGER NOT NULL
        );
        CREATE TRIGGER flows_ship_insert AFTER INSERT ON flows WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (0, NEW.id, 1); END;
        CREATE TRIGGER flows_ship_update AFTER UPDATE ON flows WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (0, NEW.id, 0); END;
        CREATE TRIGGER sessions_ship_insert AFTER INSERT ON sessions WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (1, NEW.id, 1); END;
        CREATE TRIGGER sessions_ship_update AFTER UPDATE ON sessions WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (1, NEW.id, 0); END;
        CREATE TRIGGER refusals_ship_insert AFTER INSERT ON refusals WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (2, NEW.id, 1); END;
        CREATE TRIGGER refusals_ship_update AFTER UPDATE ON refusals WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (2, NEW.id, 0); END;
        CREATE TRIGGER markers_ship_insert AFTER INSERT ON markers WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (3, NEW.id, 1); END;
        CREATE TRIGGER markers_ship_update AFTER UPDATE ON markers WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (3, NEW.id, 0); END;
        """)

    /// Version 6: the host a refused flow was known by (docs/hosts.md): SNI, HTTP Host,
    /// QUIC SNI or the DNS name of its destination; '' when none was learned (and for session
    /// rows). A row coalesces one destination per hour and keeps the newest host named.
    static let v6 = Migration(version: 6, summary: "refusals carry the flow's host", sql: """
        ALTER TABLE refusals ADD COLUMN host TEXT NOT NULL DEFAULT '';
        """)

    /// Version 7: the local store as one backend of the store protocol
    /// (`LocalSharedState`): a window knows which of the peer's windows it is (`epoch`, one more
    /// each time one opens), when it opened and on which gateway (`GatewayName`). Added columns
    /// only; a window stored before keeps epoch 1 and `opened_at` 0 (not known).
    static let v7 = Migration(version: 7, summary: "windows numbered, with their opening time and gateway", sql: """
        ALTER TABLE session_windows ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE session_windows ADD COLUMN opened_at INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE session_windows ADD COLUMN gateway TEXT NOT NULL DEFAULT '';
        """)

    /// Version 8: a flow or refusal row keeps the decision as it was taken — the policy
    /// generation, the rule's name, the reason shown, the peer's tier — so a reload that puts
    /// another rule at the same `file:line` never re-attributes it. NULL: not recorded (rows
    /// stored before). Refusals coalesce per generation too (the same place may hold another
    /// rule after a reload); the table is rebuilt for its key, rows, indexes and journal
    /// triggers kept.
    static let v8 = Migration(version: 8, summary: "flows and refusals keep the decision as taken", sql: """
        ALTER TABLE flows ADD COLUMN rule_name TEXT;
        ALTER TABLE flows ADD COLUMN reason TEXT;
        ALTER TABLE flows ADD COLUMN tier TEXT;
        ALTER TABLE flows ADD COLUMN generation INTEGER;
        CREATE TABLE refusals_v8 (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('flow', 'session')),
            peer TEXT NOT NULL,
            rule TEXT NOT NULL DEFAULT '',
            flow_key TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '',
            window INTEGER NOT NULL,
            count INTEGER NOT NULL,
            first_at INTEGER NOT NULL,
            last_at INTEGER NOT NULL,
            host TEXT NOT NULL DEFAULT '',
            rule_name TEXT,
            tier TEXT,
            generation INTEGER NOT NULL DEFAULT 0,
            UNIQUE (kind, peer, window, rule, flow_key, generation)
        );
        INSERT INTO refusals_v8 (id, kind, peer, rule, flow_key, reason, window, count, first_at, last_at, host)
            SELECT id, kind, peer, rule, flow_key, reason, window, count, first_at, last_at, host FROM refusals;
        DROP TABLE refusals;
        ALTER TABLE refusals_v8 RENAME TO refusals;
        CREATE INDEX refusals_last_at ON refusals (last_at);
        CREATE INDEX refusals_peer_last_at ON refusals (peer, last_at);
        CREATE TRIGGER refusals_ship_insert AFTER INSERT ON refusals WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (2, NEW.id, 1); END;
        CREATE TRIGGER refusals_ship_update AFTER UPDATE ON refusals WHEN EXISTS (SELECT 1 FROM ship_target)
            BEGIN INSERT INTO ship_queue (family, row_id, inserted) VALUES (2, NEW.id, 0); END;
        """)

    /// Brings the store at `connection` up to `target` (default: current). Returns the version
    /// found before migrating. Throws `.schemaTooNew` when the file is newer than this build.
    @discardableResult
    public static func migrate(_ connection: Connection, to target: Int = currentVersion) throws -> Int {
        let before = Int(try connection.scalarInt("PRAGMA user_version") ?? 0)
        if before > currentVersion {
            throw StoreError.schemaTooNew(path: connection.path, found: before, supported: currentVersion)
        }
        for m in migrations where m.version > before && m.version <= target {
            try connection.transaction {
                // Re-check inside the write lock: another process may have just applied it.
                let now = Int(try connection.scalarInt("PRAGMA user_version") ?? 0)
                guard now < m.version else { return }
                try connection.execute(m.sql)
                try connection.execute("PRAGMA user_version=\(m.version)")
            }
        }
        return before
    }
}
