import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// One listening socket of a `UnixSocketServer`: where it is, who may connect, the limits its
/// connections live under, and the protocol handler each authorised connection gets.
/// `ControlServer.endpoint(…)` and `UAPIServer.endpoint(…)` build the two the daemon serves.
public struct SocketEndpoint: Sendable {
    /// What to do with a caller that may not use the socket.
    enum Refusal: Sendable {
        /// Send this reply, then drain what it still sends.
        case reply([UInt8])
        /// Close without a word.
        case close
    }

    /// The socket path.
    public let path: String
    let mode: mode_t
    let gid: UInt32?
    let backlog: Int32
    /// The socket's name in log lines and errors (`control.sock`).
    let name: String
    /// Bounds on connections, request size and time.
    public let limits: UnixSocketServer.Limits
    /// Whether the deadline restarts with each operation (and while a long one keeps
    /// arriving) instead of running once from accept.
    let deadlinePerOperation: Bool
    /// Runs before the socket is created (the UAPI directory is made here).
    let prepare: @Sendable () throws(SocketError) -> Void
    /// nil when the caller may use the socket (`nil` credentials: `SO_PEERCRED` unreadable).
    let refusal: @Sendable (PeerCredentials?) -> Refusal?
    /// The handler of an authorised connection.
    let makeHandler: @Sendable (PeerCredentials, UnixSocketServer.StatsBox) -> any SocketProtocolHandler
}
