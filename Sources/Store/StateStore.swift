import Core
/// The shared state store (`state.db`, docs/store.md) with typed queries for both executables.
///
/// A `Store` owns one `Connection` and is used by one thread at a time: the daemon's
/// `StoreWriter` thread has its own, each tunnelctl command opens one. Opening read-write
/// applies missing migrations; opening read-only (tunnelctl's read commands) never writes and
/// refuses a store whose schema is not the current one.
public final class StateStore {
    /// The connection (for advanced queries and tests).
    public let connection: Connection

    /// The writer's per-record statements, kept apart from the connection's cache so the hot
    /// path does not hash their SQL text on every record.
    enum Hot: Int, CaseIterable { case insertFlow, updateFlow, closeFlow, upsertRefusal }
    private var hot: [Statement?] = Array(repeating: nil, count: Hot.allCases.count)

    /// The prepared statement for `which` (prepared on first use).
    func hot(_ which: Hot, _ sql: String) throws -> Statement {
        if let s = hot[which.rawValue] { return s }
        let s = try connection.prepared(sql)
        hot[which.rawValue] = s
        return s
    }

    /// Flow refusals coalesce into one row per (peer, rule, destination) per this period (1 h).
    public static let flowRefusalPeriodMs: Int64 = 3_600_000

    /// Opens the store at `path` (the directory must exist). `.readWrite` creates the file and
    /// migrates it; `.readOnly` requires an existing store at the current schema version.
    public init(path: String, mode: Connection.Mode = .readWrite, busyTimeoutMs: Int = 5000) throws {
        connection = try Connection(path: path, mode: mode, busyTimeoutMs: busyTimeoutMs)
        let version = Int(try connection.scalarInt("PRAGMA user_version") ?? 0)
        switch mode {
        case .readWrite:
            try Schema.migrate(connection)
        case .readOnly:
            if version > Schema.currentVersion {
                throw StoreError.schemaTooNew(path: path, found: version, supported: Schema.currentVersion)
            }
            if version == 0 { throw StoreError.missing(path: path) }
            if version < Schema.currentVersion {
                throw StoreError.schemaTooOld(path: path, found: version, required: Schema.currentVersion)
            }
        }
    }

    /// The schema version of the open file.
    public var schemaVersion: Int {
        get throws { Int(try connection.scalarInt("PRAGMA user_version") ?? 0) }
    }

    /// The text key of a refused flow's destination: `tcp 192.168.1.5:22`, `udp [fd00::1]:53`,
    /// `icmp 10.0.0.1`. Both the writer and `tunnelctl explain` build keys with this.
    public static func flowKey(proto: UInt8, dst: IPAddress, dstPort: UInt16) -> String {
        let name: String
        switch proto {
        case 1: name = "icmp"
        case 6: name = "tcp"
        case 17: name = "udp"
        case 58: name = "icmpv6"
        default: name = "proto-\(proto)"
        }
        guard proto == 6 || proto == 17 else { return "\(name) \(dst)" }
        return dst.isIPv6 ? "\(name) [\(dst)]:\(dstPort)" : "\(name) \(dst):\(dstPort)"
    }
}
