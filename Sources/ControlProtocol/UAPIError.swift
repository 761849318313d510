#if canImport(Glibc)
import Core
import Glibc
#endif

/// A failed UAPI operation: the errno the protocol reports (`errno=…` reply,
/// https://www.wireguard.com/xplatform/#configuration-protocol) and a message for the log.
/// Codes follow wireguard-go's `ipc` package: `EINVAL` for a bad key or value, `EPROTO` for a
/// line that is not `key=value`, `EIO` for I/O, `EADDRINUSE` for a port that cannot be bound.
public struct UAPIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The positive errno value (`EINVAL` = 22, …).
    public var errno: Int32
    /// What went wrong (for the daemon's log; the protocol carries only the number).
    public var message: String

    /// An error with an errno and a message.
    public init(errno: Int32, message: String) {
        self.errno = errno
        self.message = message
    }

    /// `EINVAL`: a key or value the protocol does not accept.
    public static func invalid(_ message: String) -> UAPIError { UAPIError(errno: EINVAL, message: message) }
    /// `EPROTO`: the input is not the protocol.
    public static func protocolError(_ message: String) -> UAPIError { UAPIError(errno: EPROTO, message: message) }
    /// `EIO`: reading or writing failed.
    public static func io(_ message: String) -> UAPIError { UAPIError(errno: EIO, message: message) }
    /// `EADDRINUSE`: the listen port cannot be bound.
    public static func portInUse(_ message: String) -> UAPIError { UAPIError(errno: EADDRINUSE, message: message) }

    /// `MESSAGE (errno N)`.
    public var description: String { "\(message) (errno \(errno))" }
}
