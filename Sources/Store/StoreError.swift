import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Everything the store can fail with. Each case names the store's path and says what to do;
/// `description` is the sentence a person reads (tunnelctl prints it, tunneld logs it).
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be opened or created (missing directory, permissions, …).
    case cannotOpen(path: String, reason: String)
    /// A read-only open found no file: nothing has created the store yet (`ENOENT`, `ENOTDIR`).
    case missing(path: String)
    /// This user may not open the file or search its directory (`EACCES`, `EPERM`); never `.missing`.
    case permissionDenied(path: String, errno: Int32)
    /// The file exists but is not a SQLite database (SQLITE_NOTADB).
    case notADatabase(path: String)
    /// The database is damaged (SQLITE_CORRUPT) while running `operation`.
    case corrupt(path: String, operation: String, message: String)
    /// The store was written by a newer TunnelVision whose schema this build does not know.
    case schemaTooNew(path: String, found: Int, supported: Int)
    /// A read-only open found an older schema it may not upgrade.
    case schemaTooOld(path: String, found: Int, required: Int)
    /// Another connection held the write lock longer than the busy timeout, on every retry.
    case busy(path: String, operation: String)
    /// Any other SQLite failure: the operation (SQL or step), the result code and `sqlite3_errmsg`.
    case sqlite(path: String, operation: String, code: Int32, message: String)
    /// `audit start` while an audit session is open; carries the open one.
    case auditAlreadyOpen(AuditSession)
    /// `audit stop` with no open audit session.
    case noOpenAudit
    /// The settings row holds text that is not a JSON object; carries the raw text.
    case settingsNotJSON(raw: String, detail: String)
    /// A system call on a file beside the database failed (the capture directory's listing or
    /// unlink); the error names the call and the path.
    case system(SystemError)
    /// A PostgreSQL call failed (the shared store): what was done, the server's (or
    /// libpq's) message, the SQLSTATE (empty when the connection itself failed), and whether
    /// trying again later can succeed (connection lost, server shutting down, timeout).
    case postgres(operation: String, message: String, sqlstate: String, transient: Bool)

    public var description: String {
        switch self {
        case let .cannotOpen(path, reason):
            return "cannot open the store at \(path): \(reason); check that the directory exists and this user may write to it"
        case let .missing(path):
            return "no store at \(path); tunneld creates it on its first start (or check StateDirectory in the config)"
        case let .permissionDenied(path, e):
            let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            return "cannot open \(path): \(errnoText(e)) (errno \(e)); run as root or with sudo, or as a user allowed to read \(dir.isEmpty ? "its directory" : dir)"
        case let .notADatabase(path):
            return "\(path) is not a TunnelVision store (not a SQLite database); move it aside and tunneld will create a fresh one, or restore a backup"
        case let .corrupt(path, operation, message):
            return "the store at \(path) is damaged (\(message)) during \(operation); move it aside and restore a backup, or let tunneld create a fresh one"
        case let .schemaTooNew(path, found, supported):
            return "the store at \(path) has schema version \(found), newer than this build understands (\(supported)); upgrade TunnelVision"
        case let .schemaTooOld(path, found, required):
            return "the store at \(path) has schema version \(found), older than \(required); start tunneld (or any writing tunnelctl command) once to upgrade it"
        case let .busy(path, operation):
            return "the store at \(path) stayed locked by another process during \(operation); try again"
        case let .sqlite(path, operation, code, message):
            return "store \(path): \(operation) failed: \(message) (SQLite code \(code))"
        case let .auditAlreadyOpen(open):
            return "audit session \(open.id) '\(open.label)' is already open (since \(TimeText.local(open.startedAt, zone: TimeText.displayZone))); stop it first with 'tunnelctl audit stop'"
        case .noOpenAudit:
            return "no audit session is open"
        case let .settingsNotJSON(raw, detail):
            return "the settings row is not a JSON object (\(detail)); raw text: \(raw)"
        case let .system(e):
            return e.description
        case let .postgres(operation, message, sqlstate, transient):
            let state = sqlstate.isEmpty ? "" : " (SQLSTATE \(sqlstate))"
            return "PostgreSQL \(operation) failed: \(message)\(state); "
                + (transient ? "retried; check that the database is up and reachable from this gateway"
                             : "check the Store connection string and the database's permissions")
        }
    }
}
