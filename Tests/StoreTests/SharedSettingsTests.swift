import Core
import Foundation
import Runtime
@testable import Store
import Testing

extension SharedBackend {
    /// An empty database of this backend with a way to run raw statements on it (the schema of an
    /// older build, applied by hand) and to open the shared state over it (nil: not available).
    func empty() throws -> (execute: (String) throws -> Void, open: () throws -> any SharedState,
                            openReading: () throws -> any SharedState)? {
        switch self {
        case .local:
            return nil  // state.db's own migrations: MigrationTests
        case .sqlite:
            let dir = NSTemporaryDirectory() + "tv-shared-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let path = dir + "/shared.db"
            let c = try Connection(path: path)
            return ({ try c.execute($0) }, { try SQLiteSharedState(path: path) }, { try SQLiteSharedState(path: path, mode: .readOnly) })
        case .postgresql:
            guard let conninfo = PGTestCluster.conninfo() else { return nil }
            let schema = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            try PGConnection(conninfo: conninfo).execute("CREATE SCHEMA \(schema)")
            let scoped = conninfo + " options='-csearch_path=\(schema)'"
            let c = try PGConnection(conninfo: scoped)
            return ({ try c.execute($0) }, { try PostgresSharedState(conninfo: scoped) }, { try PostgresSharedState(readingOnly: scoped) })
        }
    }
}

/// The shared settings row (schema v5, `tv_settings`): retention every gateway prunes with.
@Suite struct SharedSettingsTests {
    let t0: Int64 = 1_700_000_000_000

    @Test(arguments: SharedBackend.shared) func storingAndReadingTheRow(_ backend: SharedBackend) throws {
        guard let (s, connect) = try backend.make() else { return }
        #expect(try s.settings() == nil, "no gateway has stored one yet")
        var mine = Settings.factory
        try mine.set("flows", "3d")
        try mine.set("pcap-bytes", "500MB")
        try mine.set("capture", "on")
        let text = mine.sharedJSON
        #expect(!text.contains("capture"), "capture is not shared")
        let stored = try s.setSettings(text: text, gateway: "gw-a", at: t0)
        #expect(stored.text == text && stored.gateway == "gw-a" && stored.changedAt == t0 && stored.change > 0)
        let other = try connect()
        #expect(try other.settings() == stored, "another gateway's connection reads it")
        let read = try Settings.decodeShared(try #require(try other.settings()).text)
        #expect(read.settings.retention == mine.retention && read.defaulted.isEmpty && read.unknown.isEmpty)
        #expect(read.settings.capture == .factory)
        // Replaced whole, a newer change number.
        var b = Settings.factory
        try b.set("sessions", "10d")
        let again = try other.setSettings(text: b.sharedJSON, gateway: "gw-b", at: t0 + 5)
        #expect(again.change > stored.change)
        #expect(try s.settings() == again)
        #expect(try Settings.decodeShared(again.text).settings.retention == b.retention)
        // Text the store keeps as it was given (a bad row is the reader's to report).
        try s.setSettings(text: "not json", gateway: "gw-c", at: t0 + 6)
        #expect(try other.settings()?.text == "not json")
        #expect(throws: StoreError.self) { try Settings.decodeShared("not json") }
    }

    /// Gateways writing at once: every call stores a whole row, the last one stays, and the
    /// change numbers are distinct (the row is never a mix of two writes).
    @Test(arguments: SharedBackend.shared) func racingWritersLeaveOneWholeRow(_ backend: SharedBackend) throws {
        guard let (_, connect) = try backend.make() else { return }
        let writers = 4, each = 10
        final class Writer: @unchecked Sendable {
            // Safe: each Writer is used by its own thread only; its results are read after the join.
            let store: any SharedState
            var changes: [Int64] = []
            var errors: [String] = []
            init(_ s: any SharedState) { store = s }
        }
        let sides = try (0..<writers).map { _ in Writer(try connect()) }
        let texts = (0..<writers).map { w in (0..<each).map { i -> String in
            var s = Settings.factory
            try! s.set("flows", "\(w * each + i + 1)h")
            return s.sharedJSON
        } }
        let t0 = self.t0
        let threads = sides.enumerated().map { (w, side) in
            WorkerThread(name: "settings-\(w)") {
                for i in 0..<each {
                    do { side.changes.append(try side.store.setSettings(text: texts[w][i], gateway: "gw-\(w)", at: t0 + Int64(i)).change) } catch {
                        side.errors.append("\(error)")
                    }
                }
            }
        }
        for t in threads { t.join() }
        let changes = ConcurrentBox()
        let failures = ConcurrentBox()
        for side in sides {
            for c in side.changes { changes.add(c) }
            for _ in side.errors { failures.add(1) }
        }
        #expect(failures.values.isEmpty)
        #expect(Set(changes.values).count == writers * each, "one change number per write")
        let last = try #require(try connect().settings())
        #expect(last.change == changes.values.max())
        #expect(texts.flatMap { $0 }.contains(last.text) && last.gateway.hasPrefix("gw-"))
    }

    /// Compare-and-set on the change number: a stale or "first row" write stores nothing, and
    /// gateways that each set their own key by read–apply–store–retry all keep theirs.
    @Test(arguments: SharedBackend.shared) func compareAndSetKeepsEveryWritersKey(_ backend: SharedBackend) throws {
        guard let (s, connect) = try backend.make() else { return }
        var a = Settings.factory
        try a.set("flows", "1d")
        let first = try #require(try s.setSettings(text: a.sharedJSON, gateway: "gw-a", at: t0, ifChange: 0))
        #expect(try s.setSettings(text: a.sharedJSON, gateway: "gw-b", at: t0, ifChange: 0) == nil, "a row is there: not the first")
        let second = try #require(try s.setSettings(text: a.sharedJSON, gateway: "gw-b", at: t0 + 1, ifChange: first.change))
        #expect(try s.setSettings(text: Settings.factory.sharedJSON, gateway: "gw-c", at: t0 + 2, ifChange: first.change) == nil, "stale")
        #expect(try s.settings() == second)
        // Four gateways, each setting its own key five times with retries: every key survives.
        let keys = ["flows", "sessions", "refusals", "markers"]
        final class Writer: @unchecked Sendable {
            // Safe: each Writer is used by its own thread only; read after the join.
            let store: any SharedState
            var errors: [String] = []
            var retries = 0
            init(_ s: any SharedState) { store = s }
        }
        let writers = try keys.map { _ in Writer(try connect()) }
        let t0 = self.t0
        let threads = writers.enumerated().map { (w, side) in
            WorkerThread(name: "cas-\(w)") {
                for round in 1...5 {
                    var stored = false
                    while !stored {
                        do {
                            let row = try side.store.settings()
                            var st = try Settings.decodeShared(row?.text ?? Settings.factory.sharedJSON).settings
                            try st.set(keys[w], "\(round * 10 + w)h")
                            stored = try side.store.setSettings(text: st.sharedJSON, gateway: "gw-\(w)", at: t0 + Int64(round),
                                                                ifChange: row?.change ?? 0) != nil
                            if !stored { side.retries += 1 }
                        } catch { side.errors.append("\(error)"); stored = true }
                    }
                }
            }
        }
        for t in threads { t.join() }
        #expect(writers.allSatisfy { $0.errors.isEmpty }, "\(writers.flatMap(\.errors).prefix(3))")
        let last = try Settings.decodeShared(try #require(try s.settings()).text).settings
        for (w, k) in keys.enumerated() {
            var want = Settings.factory
            try want.set(k, "\(50 + w)h")
            #expect(last.value(forKey: k) == want.value(forKey: k), "\(k): \(last.value(forKey: k) ?? "-")")
        }
    }

    /// A database a v4 build left (before `tv_settings`): opening it migrates to v5, keeps its
    /// rows, and the catalogue is the description's; a reader of this build refuses it until then.
    @Test(arguments: SharedBackend.shared) func migratingFromV4(_ backend: SharedBackend) throws {
        guard let db = try backend.empty() else { return }
        let integer = backend == .sqlite ? "INTEGER" : "INT"
        try db.execute("CREATE TABLE tv_schema (version \(integer) NOT NULL)")
        for v in 1...4 {
            for statement in SharedSchema.sql(version: v, for: backend == .sqlite ? .sqlite : .postgresql) { try db.execute(statement) }
            try db.execute("INSERT INTO tv_schema (version) VALUES (\(v))")
        }
        let change = backend == .sqlite ? "1" : "nextval('tv_change')"
        try db.execute("""
            INSERT INTO tv_windows (peer, epoch, allowed_until, reconnect_at, used_up, used_down, gateway, opened_at, change)
            VALUES ('alice', 1, \(t0 + 20_000), \(t0 + 50_000), 5, 7, 'gw-a', \(t0), \(change))
            """)
        try db.execute("""
            INSERT INTO tv_refusals (gateway, id, kind, peer, rule, flow_key, reason, window_at, count, first_at, last_at, host)
            VALUES ('gw-a', 1, 'flow', 'bob', '50-ads.rules:2', 'tcp 192.0.2.7:443', 'ads', 0, 3, \(t0), \(t0), 'ads.example.com')
            """)
        if backend == .sqlite { try db.execute("UPDATE tv_change SET value = 1") }  // as a v4 gateway's write leaves it
        #expect(throws: StoreError.self, "a reader of this build does not guess at a v4 schema") { _ = try db.openReading() }
        let s = try db.open()
        #expect(try s.settings() == nil)
        #expect(try s.window(peer: "alice")?.usedDown == 7, "v4's rows are kept")
        #expect(try s.historyRefusals(since: .min, peer: "bob", gateway: nil, limit: 10).map(\.host) == ["ads.example.com"])
        let stored = try s.setSettings(text: Settings.factory.sharedJSON, gateway: "gw-a", at: t0)
        #expect(stored.change == 2, "the change counter carries on from v4's")
        let reader = try db.openReading()
        #expect(try reader.settings() == stored)
        // The migrated catalogue is the description's (as a fresh database's is).
        try SharedStateTests.expectCatalogueIsTheDescription(s, backend)
        let table = try #require(SharedSchema.tables.first { $0.name == "tv_settings" })
        #expect(table.columns.map(\.name) == ["id", "json", "changed_at", "gateway", "change"])
        #expect(SharedSchema.currentVersion >= 5)
        // Opening again applies nothing twice.
        #expect(try db.open().settings() == stored)
    }
}

/// Values collected from several threads.
final class ConcurrentBox: @unchecked Sendable {
    // Safe: every access holds `lock`.
    private let lock = NSLock()
    private var items: [Int64] = []
    func add(_ v: Int64) { lock.lock(); items.append(v); lock.unlock() }
    var values: [Int64] { lock.lock(); defer { lock.unlock() }; return items }
}
