import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Why `ControlServer` or `UAPIServer` could not create its socket: a failed system call
/// (``SystemError`` names the call and the path) or a refusal of ours, printed as
/// `bind /run/tunnelvision/control.sock: Address already in use (another process is listening …)`.
public enum SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A system call failed (socket, bind, chmod, listen, mkdir, …).
    case system(SystemError)
    /// The path does not fit `sun_path` (107 bytes).
    case pathTooLong(path: String)
    /// A file that is not a socket is in the way; it is never removed.
    case notASocket(path: String)
    /// Another process is listening on the socket.
    case inUse(path: String)
    /// The UAPI socket's interface name is not a valid interface name.
    case badInterfaceName(String, path: String)
    /// A component of the socket directory exists and is not a directory.
    case notADirectory(path: String)

    public var description: String {
        switch self {
        case .system(let e):
            return e.description
        case .pathTooLong(let path):
            return "bind \(path): \(errnoText(ENAMETOOLONG)) (socket paths are limited to 107 bytes)"
        case .notASocket(let path):
            return "bind \(path): \(errnoText(EEXIST)) (a file that is not a socket is in the way; remove it)"
        case .inUse(let path):
            return "bind \(path): \(errnoText(EADDRINUSE)) (another process is listening on it; is tunneld already running?)"
        case .badInterfaceName(let name, let path):
            return "bind \(path): \(errnoText(EINVAL)) ('\(name)' is not an interface name)"
        case .notADirectory(let path):
            return "mkdir \(path): \(errnoText(ENOTDIR))"
        }
    }
}
