#if canImport(Glibc)
import Core
import Glibc
import Runtime
#endif

/// A failed socket operation of `ControlServer` or `UAPIServer` (bind, listen, chmod, …): the
/// call, the path and the errno, printed as `bind /run/tunnelvision/control.sock: Permission denied`.
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The system call or step that failed.
    public var operation: String
    /// The socket path concerned.
    public var path: String
    /// The errno value (0 when the failure is not a system call's).
    public var errno: Int32
    /// Extra explanation (e.g. "another tunneld is running").
    public var detail: String?

    /// A failure of `operation` on `path`.
    public init(operation: String, path: String, errno: Int32, detail: String? = nil) {
        self.operation = operation
        self.path = path
        self.errno = errno
        self.detail = detail
    }

    /// `OPERATION PATH: ERRNO TEXT (DETAIL)`.
    public var description: String {
        var s = "\(operation) \(path)"
        if errno != 0 { s += ": " + errnoText(errno) }
        if let detail { s += errno != 0 ? " (\(detail))" : ": \(detail)" }
        return s
    }
}
