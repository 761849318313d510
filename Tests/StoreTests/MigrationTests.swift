import Core
import Foundation
import Testing
@testable import Store

@Suite struct MigrationTests {
    /// The v1 schema exactly as it shipped. A shipped migration must never change: this copy
    /// is the fixture older stores are upgraded from.
    static let v1Fixture = """
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
        """

    static func objects(_ store: StateStore) throws -> [String] {
        var out: [String] = []
        let s = try store.connection.prepared("SELECT type || ' ' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1")
        while try s.step() { out.append(s.text(0)) }
        s.reset()
        return out
    }

    @Test func shippedMigrationsAreFrozen() {
        #expect(Schema.v1.sql == MigrationTests.v1Fixture)
        #expect(Schema.migrations.map(\.version) == Array(1...Schema.currentVersion))
    }

    @Test func fromEmptyCreatesEveryTableAndIndex() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        let objects = try MigrationTests.objects(store)
        for table in ["flows", "refusals", "sessions", "session_windows", "audit_sessions", "markers", "peer_tiers", "settings", "daemon_state"] {
            #expect(objects.contains("table \(table)"), "missing table \(table)")
        }
        #expect(objects.contains("index flows_last_seen"))
        #expect(objects.contains("index audit_sessions_one_open"))
        // Reopening applies nothing and changes nothing.
        let before = try Fixtures.dump(store)
        let again = try StateStore(path: dir.db)
        #expect(try Fixtures.dump(again) == before)
    }

    @Test func fromTheV1FixtureKeepsDataAndAddsV2() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            let c = try Connection(path: dir.db)
            try c.transaction {
                try c.execute(MigrationTests.v1Fixture)
                try c.execute("PRAGMA user_version=1")
                try c.execute("""
                    INSERT INTO sessions (peer, started_at) VALUES ('alice', 1000);
                    INSERT INTO session_windows VALUES ('alice', 901000, 3601000);
                    INSERT INTO audit_sessions (label, started_at) VALUES ('printer', 500);
                    INSERT INTO markers (at, label, kind, audit_session_id) VALUES (600, 'begin', 'manual', 1);
                    """)
            }
        }
        // A read-only open must not upgrade it.
        #expect(throws: StoreError.schemaTooOld(path: dir.db, found: 1, required: Schema.currentVersion)) {
            try StateStore(path: dir.db, mode: .readOnly)
        }
        let store = try StateStore(path: dir.db)
        #expect(try store.schemaVersion == Schema.currentVersion)
        #expect(try store.window(peer: "alice") == SessionWindow(peer: "alice", allowedUntil: 901_000, reconnectAt: 3_601_000))
        #expect(try store.openSessions().map(\.peer) == ["alice"])
        #expect(try store.markers().first?.auditSessionId == 1)
        #expect(try MigrationTests.objects(store).contains("table daemon_state"))
        // v2's unique index now guards "one open audit session".
        #expect(throws: StoreError.auditAlreadyOpen(AuditSession(id: 1, label: "printer", startedAt: 500, endedAt: nil))) {
            try store.startAudit(label: "second", at: 700)
        }
        // Upgraded and fresh stores end with the same schema.
        let fresh = TempDir()
        defer { withExtendedLifetime(fresh) {} }
        #expect(try MigrationTests.objects(StateStore(path: fresh.db)) == MigrationTests.objects(store))
    }

    /// v6 adds `refusals.host`: a store at v5 keeps its refusal rows (host '') and their
    /// coalescing, and new attempts can name a host.
    @Test func fromV5RefusalsGainAHost() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            let c = try Connection(path: dir.db)
            _ = try Schema.migrate(c, to: 5)
            try c.execute("""
                INSERT INTO refusals (kind, peer, rule, flow_key, reason, window, count, first_at, last_at)
                VALUES ('flow', 'alice', '50-ads.rules:2', 'tcp 192.0.2.7:443', 'ads', 0, 3, 100, 200)
                """)
        }
        let store = try StateStore(path: dir.db)
        #expect(try store.schemaVersion == Schema.currentVersion)
        let before = try #require(try store.refusals(kind: .flow).first)
        #expect(before.host == "" && before.count == 3)
        try store.recordRefusal(.flow(peer: "alice", rule: "50-ads.rules:2", reason: "ads", proto: 6, dst: IPAddress("192.0.2.7")!,
                                      dstPort: 443, at: 300, host: "ads.example.com"))
        let after = try #require(try store.refusals(kind: .flow).first)
        #expect(after.host == "ads.example.com" && after.count == 4 && after.firstAt == 100)
    }

    @Test func aNewerStoreIsRefused() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        do {
            let store = try StateStore(path: dir.db)
            try store.connection.execute("PRAGMA user_version=\(Schema.currentVersion + 1)")
        }
        for mode in [Connection.Mode.readWrite, .readOnly] {
            #expect(throws: StoreError.schemaTooNew(path: dir.db, found: Schema.currentVersion + 1, supported: Schema.currentVersion)) {
                try StateStore(path: dir.db, mode: mode)
            }
        }
    }

    @Test func manyConnectionsOpeningAFreshStoreAtOnceMigrateOnce() async throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let path = dir.db
        let results = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do {
                        let s = try StateStore(path: path)
                        return try s.schemaVersion == Schema.currentVersion ? nil : "wrong version"
                    } catch { return "\(error)" }
                }
            }
            var out: [String] = []
            for await r in group { if let r { out.append(r) } }
            return out
        }
        #expect(results.isEmpty, "\(results)")
        #expect(try StateStore(path: path).schemaVersion == Schema.currentVersion)
    }

    /// Another process (python3's sqlite3) applies v1 with the same protocol and holds its
    /// transaction open; our open waits for it, re-checks the version and applies only v2.
    @Test func anotherProcessMigratingAtTheSameTimeIsWaitedFor() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let script = """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
            c.execute("PRAGMA auto_vacuum=INCREMENTAL")
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("BEGIN IMMEDIATE")
            if c.execute("PRAGMA user_version").fetchone()[0] == 0:
                for stmt in sys.argv[2].split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("PRAGMA user_version=1")
            print("locked", flush=True)
            time.sleep(0.3)
            c.execute("COMMIT")
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", script, dir.db, Schema.v1.sql]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        #expect(line.hasPrefix("locked"))
        let store = try StateStore(path: dir.db)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(try store.schemaVersion == Schema.currentVersion)
        let fresh = TempDir()
        defer { withExtendedLifetime(fresh) {} }
        #expect(try MigrationTests.objects(store) == MigrationTests.objects(StateStore(path: fresh.db)))
    }
}
