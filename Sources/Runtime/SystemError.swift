import Core
import Glibc

/// A failed system call or kernel request: what was attempted and the `errno` it returned.
///
/// `description` reads `OPERATION: TEXT (NAME)`, e.g.
/// `netlink: add address fd99::1/64 on tv0: File exists (EEXIST)` — the text from `strerror(3)`,
/// the symbolic name from `<errno.h>`.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call or operation that failed, e.g. `open(/dev/net/tun)` or `netlink: set mtu 1420 on tv0`.
    public var operation: String
    /// The `errno` value.
    public var errno: Int32

    /// An error for `operation` failing with `errno`.
    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    /// `strerror(errno)`, e.g. `File exists` (``errnoText(_:)``).
    public var errnoText: String { Runtime.errnoText(errno) }

    /// The symbolic name, e.g. `EEXIST` (or `errno 123` for one not in the table).
    public var errnoName: String { SystemError.name(errno) }

    public var description: String { "\(operation): \(errnoText) (\(errnoName))" }

    /// The `<errno.h>` name for `code`.
    public static func name(_ code: Int32) -> String {
        switch code {
        case EPERM: return "EPERM"
        case ENOENT: return "ENOENT"
        case ESRCH: return "ESRCH"
        case EINTR: return "EINTR"
        case EIO: return "EIO"
        case ENXIO: return "ENXIO"
        case E2BIG: return "E2BIG"
        case EBADF: return "EBADF"
        case EAGAIN: return "EAGAIN"
        case ENOMEM: return "ENOMEM"
        case EACCES: return "EACCES"
        case EFAULT: return "EFAULT"
        case EBUSY: return "EBUSY"
        case EEXIST: return "EEXIST"
        case ENODEV: return "ENODEV"
        case ENOTDIR: return "ENOTDIR"
        case EINVAL: return "EINVAL"
        case ENFILE: return "ENFILE"
        case EMFILE: return "EMFILE"
        case ENOSPC: return "ENOSPC"
        case EPIPE: return "EPIPE"
        case ERANGE: return "ERANGE"
        case ENAMETOOLONG: return "ENAMETOOLONG"
        case ENOSYS: return "ENOSYS"
        case ENOTSOCK: return "ENOTSOCK"
        case EMSGSIZE: return "EMSGSIZE"
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT"
        case EOPNOTSUPP: return "EOPNOTSUPP"
        case EAFNOSUPPORT: return "EAFNOSUPPORT"
        case EADDRINUSE: return "EADDRINUSE"
        case EADDRNOTAVAIL: return "EADDRNOTAVAIL"
        case ENETDOWN: return "ENETDOWN"
        case ENETUNREACH: return "ENETUNREACH"
        case ECONNRESET: return "ECONNRESET"
        case ENOBUFS: return "ENOBUFS"
        case ETIMEDOUT: return "ETIMEDOUT"
        case ECONNREFUSED: return "ECONNREFUSED"
        case EHOSTUNREACH: return "EHOSTUNREACH"
        case ECANCELED: return "ECANCELED"
        case ERFKILL: return "ERFKILL"
        default: return "errno \(code)"
        }
    }
}
