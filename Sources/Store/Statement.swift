import Core
import CSQLite

/// A prepared statement from a `Connection`'s cache: bind, step, read columns, reset.
/// Binding and stepping allocate nothing per call (text and blobs are copied by SQLite).
public struct Statement {
    let handle: OpaquePointer
    let connection: Connection

    /// SQLite's SQLITE_TRANSIENT: SQLite copies the bound bytes before the call returns.
    @inline(__always) private var transient: sqlite3_destructor_type {
        unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    }

    /// Binds an integer to parameter `index` (1-based).
    public func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    /// Binds an integer, or NULL when nil.
    public func bind(_ index: Int32, _ value: Int64?) {
        if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
    }
    /// Binds text (copied), or NULL when nil.
    public func bind(_ index: Int32, _ value: String?) {
        guard var value else { sqlite3_bind_null(handle, index); return }
        value.withUTF8 { buf in
            if buf.isEmpty {
                _ = sqlite3_bind_text(handle, index, "", 0, nil)  // nil = SQLITE_STATIC: a literal
                return
            }
            buf.withMemoryRebound(to: CChar.self) { c in
                _ = sqlite3_bind_text(handle, index, c.baseAddress, Int32(c.count), transient)
            }
        }
    }
    /// Binds a blob (copied).
    public func bind(_ index: Int32, bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), transient)
    }
    /// Binds NULL.
    public func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index) }

    /// Steps once: true when a row is available, false when done. Errors are typed.
    @discardableResult
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let sql = sqlite3_sql(handle).map { String(cString: $0) } ?? "statement"
        let e = connection.error(sql, rc)
        sqlite3_reset(handle)
        throw e
    }

    /// Steps to completion (for INSERT/UPDATE/DELETE) and resets.
    public func run() throws {
        defer { reset() }
        while try step() {}
    }

    /// Resets the statement and clears its bindings, releasing any read lock it held.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Column `i` as an integer.
    public func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }
    /// Column `i` as an integer, nil when NULL.
    public func optionalInt64(_ i: Int32) -> Int64? { isNull(i) ? nil : int64(i) }
    /// True when column `i` is NULL.
    public func isNull(_ i: Int32) -> Bool { sqlite3_column_type(handle, i) == SQLITE_NULL }
    /// Column `i` as text ("" when NULL).
    public func text(_ i: Int32) -> String {
        guard let p = sqlite3_column_text(handle, i) else { return "" }
        return String(cString: p)
    }
    /// Column `i` as text, nil when NULL.
    public func optionalText(_ i: Int32) -> String? { isNull(i) ? nil : text(i) }
    /// Column `i` as bytes.
    public func blob(_ i: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(handle, i))
        guard n > 0, let p = sqlite3_column_blob(handle, i) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
