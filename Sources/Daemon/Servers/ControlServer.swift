import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of `control.sock`: the endpoint `UnixSocketServer` serves it through
/// (`endpoint(…)`), and a server of that endpoint alone (tools and tests). Each connection
/// carries one request line, answered by `ControlProtocolHandler` (framing: `ControlWire`).
///
/// Access: the socket file is mode 0600 owned by the daemon's user, or 0660 with group `gid`
/// when a `ControlGroup` is configured. On top of the file mode every connection's
/// `SO_PEERCRED` is checked right after `accept`, before anything is read: uid 0, the daemon's
/// own effective uid, and (with a group) callers whose primary gid is that group are served;
/// anyone else gets a `permissionDenied` reply at once.
/// No client can lock others out: connections are bounded per uid and in total (`Limits`; the
/// oldest of the flooding uid makes room), each has `ioTimeout` from accept, and the loop never
/// waits on one client. Bad input never crashes the server: oversized requests get
/// `requestTooLarge`, bad JSON gets `malformedRequest`, unknown request types get
/// `unknownRequest` (the handler never sees them).
///
/// `@unchecked Sendable`: every stored property is immutable after `init`.
public final class ControlServer: @unchecked Sendable {
    /// Called on the server thread for every authorised, well-formed request of a known type.
    /// Must not block for long (it delays the other clients' replies, though not their reads).
    public typealias Handler = @Sendable (ControlRequest, PeerCredentials) -> ControlResponse
    /// Bounds on connections, request size and time.
    public typealias Limits = UnixSocketServer.Limits
    /// The server's counters.
    public typealias Stats = UnixSocketServer.Stats

    /// The socket path.
    public let path: String
    /// Limits in force.
    public let limits: Limits
    private let server: UnixSocketServer

    /// The control socket as an endpoint of a `UnixSocketServer`.
    /// - Parameters:
    ///   - path: normally `RuntimeDirectory/control.sock`.
    ///   - group: gid for `ControlGroup` (socket 0660); nil for 0600.
    ///   - limits: connections per uid and in total, request size, per-connection deadline.
    ///   - log: the daemon's logger; gets a warning per refused caller, e.g.
    ///     `control.sock: refused uid 1001 (pid 4242)`.
    ///   - handler: answers requests.
    public static func endpoint(
        path: String, group: UInt32? = nil, limits: Limits = Limits(), log: Logger? = nil, handler: @escaping Handler
    ) -> SocketEndpoint {
        let ownUID = UInt32(geteuid())
        return SocketEndpoint(
            path: path, mode: group == nil ? 0o600 : 0o660, gid: group, backlog: 128, name: "control.sock", limits: limits,
            deadlinePerOperation: false, prepare: {},
            refusal: { creds in
                guard let creds else {
                    return .reply(ControlWire.encode(.failure(.permissionDenied, "cannot read the caller's credentials (SO_PEERCRED)")))
                }
                guard isAuthorized(creds, ownUID: ownUID, group: group) else {
                    log?.warning("control.sock: refused uid \(creds.uid) (pid \(creds.pid))")
                    return .reply(ControlWire.encode(.failure(.permissionDenied, "uid \(creds.uid) may not use the control socket")))
                }
                return nil
            },
            makeHandler: { creds, stats in ControlProtocolHandler(creds: creds, limits: limits, stats: stats, handler: handler) })
    }

    /// Creates the socket at `path` (stale socket replaced; a live one is an error) and starts
    /// serving it on a thread of its own (the daemon serves it with UAPI on one thread instead:
    /// `UnixSocketServer(endpoints:)` with `endpoint(…)`). Parameters as for `endpoint(…)`.
    public init(
        path: String, group: UInt32? = nil, limits: Limits = Limits(), log: Logger? = nil,
        handler: @escaping Handler
    ) throws(SocketError) {
        self.path = path
        self.limits = limits
        server = try UnixSocketServer(endpoints: [Self.endpoint(path: path, group: group, limits: limits, log: log, handler: handler)],
                                      threadName: "tunneld-control")
    }

    /// Stops serving (closing every open connection), removes the socket file if it is still
    /// the one this server created. Safe to call more than once.
    public func stop() { server.stop() }

    deinit { stop() }

    /// The server's counters (connections accepted, refused, evicted, timed out, open now).
    public func stats() -> Stats { server.stats(0) }

    /// The gid of the group called `name` (for `ControlGroup`), or nil when there is none.
    public static func groupID(named name: String) -> UInt32? {
        var group = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16384)
        let rc = getgrnam_r(name, &group, &buffer, buffer.count, &result)
        guard rc == 0, result != nil else { return nil }
        return UInt32(group.gr_gid)
    }

    /// True when `creds` may use the socket (see the type's documentation).
    public static func isAuthorized(_ creds: PeerCredentials, ownUID: UInt32, group: UInt32?) -> Bool {
        creds.uid == 0 || creds.uid == ownUID || (group != nil && creds.gid == group)
    }
}
