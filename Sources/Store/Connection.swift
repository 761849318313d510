import Core
import CSQLite
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// One SQLite connection to the store file, used by one thread at a time.
///
/// Opening sets WAL journaling, `synchronous=NORMAL`, foreign keys and a busy handler that
/// sleeps in 1 ms steps (so a waiting writer gets the lock soon after it is released, instead of
/// SQLite's default back-off of up to 100 ms). Writers take the lock with `BEGIN IMMEDIATE`
/// (`transaction`), retried when the busy timeout alone was not enough. Prepared statements
/// are cached by SQL text. Every failure is a `StoreError` naming the path and the operation.
public final class Connection {
    /// How the file is opened.
    public enum Mode: Sendable {
        /// Create the file if missing; migrations may run.
        case readWrite
        /// For read commands: never creates, never migrates, never writes.
        case readOnly
    }

    /// The file this connection opened.
    public let path: String
    /// The open mode.
    public let mode: Mode
    /// Longest time one lock attempt waits for another connection, in milliseconds.
    public let busyTimeoutMs: Int
    /// How many times `BEGIN IMMEDIATE` / `COMMIT` are retried after the busy timeout expired.
    public var busyRetries = 3

    let db: OpaquePointer
    private var cache: [String: OpaquePointer] = [:]
    private var inTransaction = false

    /// Opens (and in `.readWrite` mode creates) the database file at `path`. The directory
    /// must exist. Throws `.missing`, `.permissionDenied`, `.cannotOpen`, `.notADatabase` or `.corrupt` with the path.
    public init(path: String, mode: Mode = .readWrite, busyTimeoutMs: Int = 5000) throws {
        self.path = path
        self.mode = mode
        self.busyTimeoutMs = max(0, busyTimeoutMs)
        // Only "no such file" means "no store yet"; a directory this user may not search is
        // EACCES, which must not read as an empty history.
        if mode == .readOnly && access(path, F_OK) != 0 {
            let e = errno
            if e == EACCES || e == EPERM { throw StoreError.permissionDenied(path: path, errno: e) }
            throw StoreError.missing(path: path)
        }
        var handle: OpaquePointer?
        let flags = (mode == .readWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY)
            | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let systemErrno = handle.map { sqlite3_system_errno($0) } ?? errno
            sqlite3_close_v2(handle)
            if systemErrno == EACCES || systemErrno == EPERM {
                throw StoreError.permissionDenied(path: path, errno: systemErrno)
            }
            let reason = systemErrno != 0 ? "\(message) (\(errnoText(systemErrno)))" : message
            throw StoreError.cannotOpen(path: path, reason: reason)
        }
        db = handle
        sqlite3_extended_result_codes(db, 0)
        // The context pointer carries the timeout itself, so the C callback captures nothing.
        sqlite3_busy_handler(db, { context, count in
            let timeoutMs = Int(bitPattern: context)
            let waited = count < 100 ? Int(count) : 100 + (Int(count) - 100) * 5
            if waited >= timeoutMs { return 0 }
            Sys.sleep(milliseconds: count < 100 ? 1 : 5)
            return 1
        }, UnsafeMutableRawPointer(bitPattern: self.busyTimeoutMs))
        do {
            // Reading the header is what reveals "not a database" / "malformed".
            _ = try scalarInt("PRAGMA user_version")
            if mode == .readWrite {
                // Takes effect only while the file has no tables (a new store), else a no-op; it
                // lets prune give pages back with `PRAGMA incremental_vacuum`.
                try execute("PRAGMA auto_vacuum=INCREMENTAL")
                try retryingBusy("PRAGMA journal_mode=WAL") {
                    let jm = try scalarText("PRAGMA journal_mode=WAL")
                    if jm?.lowercased() != "wal" {
                        throw StoreError.sqlite(path: path, operation: "PRAGMA journal_mode=WAL", code: SQLITE_ERROR,
                                                message: "journal mode stayed '\(jm ?? "?")'")
                    }
                }
                try execute("PRAGMA synchronous=NORMAL")
            } else {
                try execute("PRAGMA query_only=ON")
            }
            try execute("PRAGMA foreign_keys=ON")
        } catch {
            for (_, s) in cache { sqlite3_finalize(s) }
            cache.removeAll()
            sqlite3_close_v2(db)
            throw error
        }
    }

    deinit {
        for (_, s) in cache { sqlite3_finalize(s) }
        sqlite3_close_v2(db)
    }

    // MARK: - Errors

    /// The typed error for result code `rc` of `operation`.
    func error(_ operation: String, _ rc: Int32) -> StoreError {
        let message = String(cString: sqlite3_errmsg(db))
        // SQLite opens the -wal/-shm files lazily: a permission problem can surface on the first query.
        let systemErrno = sqlite3_system_errno(db)
        if rc & 0xff == SQLITE_CANTOPEN, systemErrno == EACCES || systemErrno == EPERM {
            return .permissionDenied(path: path, errno: systemErrno)
        }
        switch rc & 0xff {
        case SQLITE_NOTADB: return .notADatabase(path: path)
        case SQLITE_CORRUPT: return .corrupt(path: path, operation: operation, message: message)
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy(path: path, operation: operation)
        default: return .sqlite(path: path, operation: operation, code: rc, message: message)
        }
    }

    // MARK: - Statements

    /// A cached prepared statement for `sql` (reset, bindings cleared).
    public func prepared(_ sql: String) throws -> Statement {
        if let s = cache[sql] { return Statement(handle: s, connection: self) }
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == SQLITE_OK, let s else { throw error("prepare \(sql)", rc) }
        cache[sql] = s
        return Statement(handle: s, connection: self)
    }

    /// Runs one or more SQL statements that return no rows of interest.
    public func execute(_ sql: String) throws {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(sql, rc) }
    }

    /// The first column of the first row of `sql` as an integer (nil when no row or NULL).
    public func scalarInt(_ sql: String, _ binds: [Int64] = []) throws -> Int64? {
        let s = try prepared(sql)
        defer { s.reset() }
        for (i, v) in binds.enumerated() { s.bind(Int32(i + 1), v) }
        guard try s.step() else { return nil }
        return s.isNull(0) ? nil : s.int64(0)
    }

    /// The first column of the first row of `sql` as text (nil when no row or NULL).
    public func scalarText(_ sql: String) throws -> String? {
        let s = try prepared(sql)
        defer { s.reset() }
        guard try s.step() else { return nil }
        return s.text(0)
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    public var changes: Int { Int(sqlite3_changes(db)) }

    /// The rowid of the last INSERT.
    public var lastInsertRowid: Int64 { sqlite3_last_insert_rowid(db) }

    // MARK: - Transactions

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT` (the write lock is taken up front, so the
    /// transaction never fails half-way with SQLITE_BUSY). BEGIN and COMMIT are retried
    /// `busyRetries` times after the busy timeout; an error in `body` rolls back and rethrows.
    /// Nested calls run inside the outer transaction.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        if inTransaction { return try body() }
        try retryingBusy("BEGIN IMMEDIATE") { try execute("BEGIN IMMEDIATE") }
        inTransaction = true
        defer { inTransaction = false }
        let result: T
        do {
            result = try body()
        } catch {
            sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
        do {
            try retryingBusy("COMMIT") { try execute("COMMIT") }
        } catch {
            sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
        return result
    }

    /// Runs `body` inside a read transaction (`BEGIN DEFERRED`), so several queries see one snapshot.
    public func read<T>(_ body: () throws -> T) throws -> T {
        if inTransaction { return try body() }
        try execute("BEGIN")
        inTransaction = true
        defer { inTransaction = false }
        do {
            let r = try body()
            try execute("COMMIT")
            return r
        } catch {
            sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// Calls `body`, retrying it when it throws `.busy` (after the busy handler gave up).
    func retryingBusy(_ operation: String, _ body: () throws -> Void) throws {
        var attempt = 0
        while true {
            do {
                try body()
                return
            } catch StoreError.busy {
                attempt += 1
                if attempt > busyRetries { throw StoreError.busy(path: path, operation: operation) }
                Sys.sleep(milliseconds: attempt)
            }
        }
    }
}
