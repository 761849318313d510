import Core
import Runtime
/// Why `ControlClient.send` got no reply. `daemonNotRunning` is separate so `tunnelctl` can exit
/// with code 3 (tunnelctl(8)).
public enum ControlClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No socket file, or nobody accepting on it (`ENOENT`, `ECONNREFUSED`).
    case daemonNotRunning(path: String)
    /// The socket exists but this user may not connect (`EACCES`/`EPERM`), or the daemon refused
    /// the caller's uid.
    case permissionDenied(path: String, message: String)
    /// No complete reply before the timeout.
    case timedOut(path: String, seconds: Double)
    /// A system call failed (the error names the call and the socket path).
    case system(SystemError)
    /// The reply was not a valid response.
    case badReply(String)

    /// A message for a person, with what to do.
    public var description: String {
        switch self {
        case .daemonNotRunning(let path):
            return "tunneld is not running (no daemon listening on \(path)); start it with `systemctl start tunneld`, or check RuntimeDirectory in the config"
        case .permissionDenied(let path, let message):
            return "permission denied on \(path): \(message); run as root, as the daemon's user, or as a member of its ControlGroup"
        case .timedOut(let path, let seconds):
            return "tunneld did not answer on \(path) within \(seconds)s; it may be overloaded or stuck (see `journalctl -u tunneld`)"
        case .system(let e):
            return e.description
        case .badReply(let m):
            return "unexpected reply from tunneld: \(m); are tunnelctl and tunneld the same version?"
        }
    }
}
