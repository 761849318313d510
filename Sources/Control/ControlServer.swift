import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of `control.sock`: one thread accepts connections, reads one request line,
/// checks the caller, calls the handler and writes the response (framing: `ControlWire`).
///
/// Access: the socket file is mode 0600 owned by the daemon's user, or 0660 with group `gid`
/// when a `ControlGroup` is configured. On top of the file mode every connection's
/// `SO_PEERCRED` is checked: uid 0, the daemon's own effective uid, and (with a group) callers
/// whose primary gid is that group are served; anyone else gets a `permissionDenied` reply.
/// Bad input never crashes the server: oversized requests get `requestTooLarge`, bad JSON gets
/// `malformedRequest`, unknown request types get `unknownRequest` (the handler never sees them).
///
/// `@unchecked Sendable`: all stored properties are immutable after `init`, and `SocketListener`
/// is itself thread-safe.
public final class ControlServer: @unchecked Sendable {
    /// Called on the server thread for every authorised, well-formed request of a known type.
    /// Must not block for long (it delays the next client).
    public typealias Handler = @Sendable (ControlRequest, PeerCredentials) -> ControlResponse

    private let listener: SocketListener
    /// The socket path.
    public let path: String

    /// Creates the socket at `path` (stale socket replaced; a live one is an error) and starts
    /// serving.
    /// - Parameters:
    ///   - path: normally `RuntimeDirectory/control.sock`.
    ///   - group: gid for `ControlGroup` (socket 0660); nil for 0600.
    ///   - ioTimeout: per-connection deadline for reading the request and writing the reply.
    ///   - handler: answers requests.
    ///   - log: the daemon's logger; gets a warning per refused caller, e.g.
    ///     `control.sock: refused uid 1001 (pid 4242)`.
    public init(
        path: String, group: UInt32? = nil, ioTimeout: Duration = .seconds(2), log: Logger? = nil,
        handler: @escaping Handler
    ) throws(SocketError) {
        self.path = path
        let ownUID = UInt32(geteuid())
        let timeoutMs = SocketIO.ms(ioTimeout)
        listener = try SocketListener(path: path, mode: group == nil ? 0o600 : 0o660, gid: group) { fd, creds in
            ControlServer.serve(fd: fd, creds: creds, ownUID: ownUID, group: group, timeoutMs: timeoutMs, log: log, handler: handler)
        }
        listener.start(name: "tunneld-control")
    }

    /// Stops accepting, waits for the request in progress, removes the socket file.
    public func stop() { listener.stop() }

    deinit { listener.stop() }

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

    static func serve(
        fd: Int32, creds: PeerCredentials?, ownUID: UInt32, group: UInt32?, timeoutMs: Int64, log: Logger?,
        handler: Handler
    ) {
        let deadline = SocketIO.nowMs() + timeoutMs
        func reply(_ r: ControlResponse) { _ = try? SocketIO.writeAll(fd, ControlWire.encode(r), deadlineMs: deadline, path: "control.sock") }
        var reader = LineReader(fd: fd, limit: ControlWire.maxRequestBytes)
        let line: [UInt8]
        switch reader.readLine(deadlineMs: deadline) {
        case .success(let l): line = l
        case .failure(.tooLong):
            reply(.failure(.requestTooLarge, "request larger than \(ControlWire.maxRequestBytes) bytes"))
            return
        case .failure(.closed(let partial)):
            if partial { reply(.failure(.malformedRequest, "request not terminated by a newline")) }
            return
        case .failure(.timedOut):
            reply(.failure(.malformedRequest, "no complete request within \(timeoutMs) ms"))
            return
        case .failure(.failed):
            return
        }
        // Credentials are checked after the (bounded) read so that a refused client reliably
        // gets its reply instead of a broken pipe while it is still writing.
        guard let creds else {
            reply(.failure(.permissionDenied, "cannot read the caller's credentials (SO_PEERCRED)"))
            return
        }
        guard isAuthorized(creds, ownUID: ownUID, group: group) else {
            log?.warning("control.sock: refused uid \(creds.uid) (pid \(creds.pid))")
            reply(.failure(.permissionDenied, "uid \(creds.uid) may not use the control socket"))
            return
        }
        switch ControlWire.decodeRequest(line) {
        case .failure(let e): reply(.error(e))
        case .success(.unknown(let type)):
            reply(.failure(.unknownRequest, "unknown request '\(type)'; this daemon knows status, peers, policyReload, policyShow, kick"))
        case .success(let request): reply(handler(request, creds))
        }
    }
}
