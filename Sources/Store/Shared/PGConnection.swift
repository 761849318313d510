import CLibPQ
import Core
import Glibc

/// One libpq connection (the shared store), used by one thread at a time.
///
/// Every statement runs with a deadline: sent with `PQsendQueryParams`, waited for with poll(2)
/// on the connection's socket. A statement that misses its deadline is cancelled and the
/// connection dropped (a transient error); so is one whose connection broke. The next call
/// connects again to the same connection string — which is how a primary failover is survived
/// (a new connection to the same URL). The password is never here: libpq reads `passfile`,
/// `PGPASSFILE` or `~/.pgpass` itself.
public final class PGConnection {
    /// The connection string (any libpq form).
    public let conninfo: String
    /// Deadline of a statement unless a call gives its own, ms.
    public let timeoutMs: Int
    private var conn: OpaquePointer?
    private var prepared: Set<String> = []

    /// A connection to `conninfo` (connected now; `connect_timeout` is added when absent).
    public init(conninfo: String, timeoutMs: Int = 5_000) throws {
        self.conninfo = conninfo
        self.timeoutMs = timeoutMs
        try connect()
    }

    deinit { if let conn { PQfinish(conn) } }

    /// True while connected.
    public var isConnected: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    private func connect() throws {
        if let c = conn { PQfinish(c) }
        conn = nil
        prepared = []
        let keys = ["dbname", "connect_timeout", "application_name"]
        let values = [conninfo, "\(max(1, (timeoutMs + 999) / 1000))", "tunnelvision"]
        // expand_dbname = 1: the first "dbname" may be a full connection string or URL, whose
        // own settings win over the defaults after it.
        let c: OpaquePointer? = withCStrings(keys) { k in
            withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let c else { throw StoreError.postgres(operation: "connect", message: "out of memory", sqlstate: "", transient: true) }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = PGConnection.trimmed(String(cString: PQerrorMessage(c)))
            PQfinish(c)
            throw StoreError.postgres(operation: "connect", message: message, sqlstate: "", transient: true)
        }
        _ = PQsetnonblocking(c, 1)
        // Server notices ("relation … already exists, skipping" of IF NOT EXISTS) are not errors;
        // libpq would print each to stderr, which is the daemon's log.
        _ = PQsetNoticeProcessor(c, { _, _ in }, nil)
        conn = c
    }

    /// Runs `sql` with text `params` ($1…), within `timeoutMs` (default: the connection's).
    /// `name`: a statement to prepare once per connection and reuse (hot statements).
    @discardableResult
    public func execute(_ sql: String, _ params: [String?] = [], name: String? = nil, timeoutMs: Int? = nil,
                        operation: String = "query") throws -> PGResult
    {
        if conn == nil || PQstatus(conn) != CONNECTION_OK { try connect() }
        guard let c = conn else { throw StoreError.postgres(operation: operation, message: "not connected", sqlstate: "", transient: true) }
        let deadline = PGConnection.nowMs() + Int64(timeoutMs ?? self.timeoutMs)
        if let name, !prepared.contains(name) {
            let sent = sql.withCString { PQsendPrepare(c, name, $0, Int32(params.count), nil) }
            guard sent == 1 else { throw broken(operation) }
            let r = try wait(c, deadline: deadline, operation: operation)
            prepared.insert(name)
            _ = r
        }
        let sent: Int32 = withOptionalCStrings(params) { values in
            if let name { return PQsendQueryPrepared(c, name, Int32(params.count), values, nil, nil, 0) }
            // No parameters: the simple protocol, which also runs several statements (migrations).
            if params.isEmpty { return sql.withCString { PQsendQuery(c, $0) } }
            return sql.withCString { PQsendQueryParams(c, $0, Int32(params.count), nil, values, nil, nil, 0) }
        }
        guard sent == 1 else { throw broken(operation) }
        return try wait(c, deadline: deadline, operation: operation)
    }

    /// Runs `copy` (a `COPY … FROM STDIN` statement) with `rows` as its data (COPY text format,
    /// `PGCopyRows`), within the statement deadline. Returns the rows the server took.
    @discardableResult
    public func copyIn(_ copy: String, _ rows: PGCopyRows, timeoutMs: Int? = nil, operation: String = "copy") throws -> Int {
        if conn == nil || PQstatus(conn) != CONNECTION_OK { try connect() }
        guard let c = conn else { throw StoreError.postgres(operation: operation, message: "not connected", sqlstate: "", transient: true) }
        let deadline = PGConnection.nowMs() + Int64(timeoutMs ?? self.timeoutMs)
        guard copy.withCString({ PQsendQuery(c, $0) }) == 1 else { throw broken(operation) }
        // Until the server is in COPY IN (or said why not).
        try flush(c, deadline: deadline, operation: operation)
        try awaitResult(c, deadline: deadline, operation: operation)
        guard let first = PQgetResult(c) else { throw broken(operation) }
        guard PQresultStatus(first) == PGRES_COPY_IN else {
            let state = PQresultErrorField(first, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = PGConnection.trimmed(String(cString: PQresultErrorMessage(first)))
            PQclear(first)
            _ = try? wait(c, deadline: deadline, operation: operation)  // the rest of the results
            throw StoreError.postgres(operation: operation, message: message, sqlstate: state, transient: PGConnection.isTransient(sqlstate: state))
        }
        PQclear(first)
        try rows.bytes.withUnsafeBufferPointer { all in
            var offset = 0
            while offset < all.count {
                let n = min(1 << 16, all.count - offset)
                let sent = all.baseAddress!.advanced(by: offset).withMemoryRebound(to: CChar.self, capacity: n) {
                    PQputCopyData(c, $0, Int32(n))
                }
                if sent < 0 { throw broken(operation) }
                if sent == 0 {  // the send buffer is full (non-blocking): let it drain
                    try poll(c, events: Int16(POLLOUT), deadline: deadline, operation: operation)
                    if PQflush(c) < 0 { throw broken(operation) }
                    continue
                }
                offset += n
            }
        }
        while true {
            let e = PQputCopyEnd(c, nil)
            if e == 1 { break }
            if e < 0 { throw broken(operation) }
            try poll(c, events: Int16(POLLOUT), deadline: deadline, operation: operation)
            if PQflush(c) < 0 { throw broken(operation) }
        }
        return try wait(c, deadline: deadline, operation: operation).affected
    }

    /// Runs `body` in one transaction (BEGIN … COMMIT; ROLLBACK when it throws).
    public func transaction<T>(_ operation: String = "transaction", begin: String = "BEGIN", _ body: () throws -> T) throws -> T {
        try execute(begin, operation: operation)
        do {
            let v = try body()
            try execute("COMMIT", operation: operation)
            return v
        } catch {
            if isConnected { _ = try? execute("ROLLBACK", operation: operation) }
            throw error
        }
    }

    /// Sends what libpq has buffered (reading meanwhile, so the server never waits on us).
    private func flush(_ c: OpaquePointer, deadline: Int64, operation: String) throws {
        while true {
            let f = PQflush(c)
            if f == 0 { return }
            if f < 0 { throw broken(operation) }
            try poll(c, events: Int16(POLLOUT | POLLIN), deadline: deadline, operation: operation)
            if PQconsumeInput(c) == 0 { throw broken(operation) }
        }
    }

    /// Reads until the next result is complete (`PQgetResult` will not block).
    private func awaitResult(_ c: OpaquePointer, deadline: Int64, operation: String) throws {
        while PQisBusy(c) == 1 {
            try poll(c, events: Int16(POLLIN), deadline: deadline, operation: operation)
            if PQconsumeInput(c) == 0 { throw broken(operation) }
        }
    }

    /// Flushes, waits for and collects every result of the statement just sent.
    private func wait(_ c: OpaquePointer, deadline: Int64, operation: String) throws -> PGResult {
        try flush(c, deadline: deadline, operation: operation)
        var out = PGResult()
        var failure: StoreError?
        while true {
            try awaitResult(c, deadline: deadline, operation: operation)
            guard let r = PQgetResult(c) else { break }
            defer { PQclear(r) }
            switch PQresultStatus(r) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_COPY_IN, PGRES_COPY_OUT:
                out = PGResult(r)
            default:
                let state = PQresultErrorField(r, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
                let message = PGConnection.trimmed(String(cString: PQresultErrorMessage(r)))
                failure = failure ?? .postgres(operation: operation, message: message, sqlstate: state,
                                               transient: PGConnection.isTransient(sqlstate: state))
            }
        }
        if PQstatus(c) != CONNECTION_OK { drop() }
        if let failure { throw failure }
        return out
    }

    private func poll(_ c: OpaquePointer, events: Int16, deadline: Int64, operation: String) throws {
        let fd = PQsocket(c)
        guard fd >= 0 else { throw broken(operation) }
        while true {
            let left = deadline - PGConnection.nowMs()
            if left <= 0 {
                if let cancel = PQgetCancel(c) {
                    var buf = [CChar](repeating: 0, count: 256)
                    _ = PQcancel(cancel, &buf, Int32(buf.count))
                    PQfreeCancel(cancel)
                }
                drop()
                throw StoreError.postgres(operation: operation, message: "no answer within \(timeoutMs) ms (cancelled)", sqlstate: "",
                                          transient: true)
            }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = Glibc.poll(&p, 1, Int32(min(left, Int64(Int32.max))))
            if n > 0 { return }
            if n < 0 && errno != EINTR { throw broken(operation) }
        }
    }

    private func broken(_ operation: String) -> StoreError {
        let message = conn.map { PGConnection.trimmed(String(cString: PQerrorMessage($0))) } ?? "not connected"
        drop()
        return .postgres(operation: operation, message: message.isEmpty ? "connection lost" : message, sqlstate: "", transient: true)
    }

    private func drop() {
        if let c = conn { PQfinish(c) }
        conn = nil
        prepared = []
    }

    /// Retrying can help: connection (08), operator intervention (57P0x), resources (53),
    /// serialization failure and deadlock (40001, 40P01), a cancelled statement (57014).
    static func isTransient(sqlstate s: String) -> Bool {
        s.hasPrefix("08") || s.hasPrefix("53") || s.hasPrefix("57P") || s == "57014" || s == "40001" || s == "40P01" || s.isEmpty
    }

    /// A server message's lines, each trimmed (Core's one trimming rule), as one line.
    static func trimmed(_ s: String) -> String {
        s.split(separator: "\n").map { $0.trimmedSpaces() }.filter { !$0.isEmpty }.joined(separator: "; ")
    }

    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// A statement's rows, copied out of libpq's result (text values; nil for SQL NULL).
public struct PGResult: Sendable {
    /// Rows of column values.
    public var rows: [[String?]] = []
    /// Rows the statement changed (`INSERT`, `UPDATE`, `DELETE`).
    public var affected: Int = 0

    init() {}

    init(_ r: OpaquePointer) {
        let n = Int(PQntuples(r)), m = Int(PQnfields(r))
        rows.reserveCapacity(n)
        for i in 0..<n {
            var row: [String?] = []
            row.reserveCapacity(m)
            for j in 0..<m {
                row.append(PQgetisnull(r, Int32(i), Int32(j)) == 1 ? nil : String(cString: PQgetvalue(r, Int32(i), Int32(j))))
            }
            rows.append(row)
        }
        affected = Int(String(cString: PQcmdTuples(r))) ?? 0
    }

    /// Column `col` of row `row` as text.
    public func text(_ row: Int, _ col: Int) -> String? { rows[row][col] }
    /// Column `col` of row `row` as an integer (0 for NULL).
    public func int64(_ row: Int, _ col: Int) -> Int64 { rows[row][col].flatMap { Int64($0) } ?? 0 }
}

/// `body` with a C array of the strings (valid during the call).
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let dup = strings.map { strdup($0) }
    defer { dup.forEach { free($0) } }
    var ptrs: [UnsafePointer<CChar>?] = dup.map { UnsafePointer($0) }
    ptrs.append(nil)
    return ptrs.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// `body` with a C array of the optional strings (NULL for nil).
private func withOptionalCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    let dup = strings.map { $0.map { strdup($0) } ?? nil }
    defer { dup.forEach { free($0) } }
    let ptrs: [UnsafePointer<CChar>?] = dup.map { $0.map { UnsafePointer($0) } }
    if ptrs.isEmpty { return body(nil) }
    return ptrs.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Rows in PostgreSQL's COPY text format, built as bytes (one buffer per batch, no string per
/// value): columns separated by tabs, rows ended by newlines, `\N` for NULL, and backslash,
/// tab, newline and carriage return escaped.
public struct PGCopyRows {
    public private(set) var bytes: [UInt8] = []
    public private(set) var count = 0
    private var atRowStart = true

    public init(reserve: Int = 0) { bytes.reserveCapacity(reserve) }

    private mutating func separate() {
        if !atRowStart { bytes.append(0x09) }
        atRowStart = false
    }

    /// An integer column.
    public mutating func add(_ v: Int64) {
        separate()
        if v == 0 { bytes.append(0x30); return }
        var x = v.magnitude
        if v < 0 { bytes.append(0x2D) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buf in
            var i = 20
            while x > 0 {
                i -= 1
                buf[i] = UInt8(truncatingIfNeeded: x % 10) + 0x30
                x /= 10
            }
            bytes.append(contentsOf: buf[i..<20])
        }
    }

    /// An optional integer column.
    public mutating func add(_ v: Int64?) {
        guard let v else { return addNull() }
        add(v)
    }

    /// A text column (escaped).
    public mutating func add(_ s: String?) {
        guard var s else { return addNull() }
        separate()
        s.withUTF8 { u in
            for b in u {
                switch b {
                case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
                case 0x09: bytes.append(0x5C); bytes.append(0x74)
                case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
                case 0x0D: bytes.append(0x5C); bytes.append(0x72)
                default: bytes.append(b)
                }
            }
        }
    }

    /// A NULL column.
    public mutating func addNull() {
        separate()
        bytes.append(0x5C)
        bytes.append(0x4E)
    }

    /// Ends the row.
    public mutating func endRow() {
        bytes.append(0x0A)
        atRowStart = true
        count += 1
    }
}
