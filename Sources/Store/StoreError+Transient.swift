import CSQLite
import Core
extension StoreError {
    /// True when retrying the same write later can succeed: the store is locked, full, read-only,
    /// unreachable or failing I/O (SQLITE_BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN,
    /// PROTOCOL, and the open/permission errors). False for errors the data itself causes or a
    /// damaged file (constraint, mismatch, corrupt, not a database), which no retry fixes.
    public var isTransient: Bool {
        switch self {
        case .busy, .cannotOpen, .permissionDenied, .system: return true
        case let .postgres(_, _, _, transient): return transient
        case let .sqlite(_, _, code, _):
            switch code & 0xff {
            case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN,
                 SQLITE_PROTOCOL, SQLITE_INTERRUPT:
                return true
            default: return false
            }
        default: return false
        }
    }
}
