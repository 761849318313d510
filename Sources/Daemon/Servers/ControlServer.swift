import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of `control.sock`: one thread runs a `poll` loop over every connection
/// (`ControlEventLoop`), reads one request line per connection, checks the caller, calls the
/// handler and writes the response (framing: `ControlWire`).
///
/// Access: the socket file is mode 0600 owned by the daemon's user, or 0660 with group `gid`
/// when a `ControlGroup` is configured. On top of the file mode every connection's
/// `SO_PEERCRED` is checked right after `accept`, before anything is read: uid 0, the daemon's
/// own effective uid, and (with a group) callers whose primary gid is that group are served;
/// anyone else gets a `permissionDenied` reply at once.
/// No client can lock others out (issue 13 item 5): connections are bounded per uid and in
/// total (`Limits`; the oldest of the flooding uid makes room), each has `ioTimeout` from
/// accept, and the loop never waits on one client. Bad input never crashes the server:
/// oversized requests get `requestTooLarge`, bad JSON gets `malformedRequest`, unknown request
/// types get `unknownRequest` (the handler never sees them).
///
/// `@unchecked Sendable`: `path`, `listenFD`, `loop` and `shutdown` are immutable after `init`;
/// `thread`/`stopped` are guarded by `lock`; the loop's counters are behind a `Mutex`.
public final class ControlServer: @unchecked Sendable {
    /// Called on the server thread for every authorised, well-formed request of a known type.
    /// Must not block for long (it delays the other clients' replies, though not their reads).
    public typealias Handler = @Sendable (ControlRequest, PeerCredentials) -> ControlResponse

    /// The socket path.
    public let path: String
    /// Limits in force.
    public let limits: Limits
    private let listenFD: Int32
    private let inode: UInt
    private let shutdown: EventNotifier
    private let loop: ControlEventLoop
    private let lock = ConditionLock()
    private var thread: WorkerThread?
    private var stopped = false

    /// Creates the socket at `path` (stale socket replaced; a live one is an error) and starts
    /// serving.
    /// - Parameters:
    ///   - path: normally `RuntimeDirectory/control.sock`.
    ///   - group: gid for `ControlGroup` (socket 0660); nil for 0600.
    ///   - limits: connections per uid and in total, request size, per-connection deadline.
    ///   - handler: answers requests.
    ///   - log: the daemon's logger; gets a warning per refused caller, e.g.
    ///     `control.sock: refused uid 1001 (pid 4242)`.
    public init(
        path: String, group: UInt32? = nil, limits: Limits = Limits(), log: Logger? = nil,
        handler: @escaping Handler
    ) throws(SocketError) {
        self.path = path
        self.limits = limits
        let fd = try SocketIO.listen(path: path, mode: group == nil ? 0o600 : 0o660, gid: group, backlog: 128)
        do {
            // The loop accepts until EAGAIN, so the listening socket must not block.
            _ = try Sys.call("fcntl(\(path), O_NONBLOCK)") { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
            shutdown = try EventNotifier()
        } catch {
            Sys.close(fd)
            try? Sys.unlinkIfPresent(path)
            throw .system(error)
        }
        listenFD = fd
        inode = Sys.statIfPresent(path).map { UInt($0.st_ino) } ?? 0
        loop = ControlEventLoop(listenFD: fd, shutdown: shutdown, limits: limits, ownUID: UInt32(geteuid()), group: group,
                                log: log, handler: handler)
        let loop = self.loop
        let thread = WorkerThread(name: "tunneld-control") { loop.run() }
        lock.withLock { self.thread = thread }
    }

    /// Stops serving (closing every open connection), removes the socket file if it is still
    /// the one this server created. Safe to call more than once.
    public func stop() {
        let running: WorkerThread?? = lock.withLock {
            if stopped { return .none }
            stopped = true
            return .some(thread)
        }
        guard case .some(let thread) = running else { return }
        if let thread {
            shutdown.signal()
            thread.join()
        }
        if let st = Sys.statIfPresent(path), UInt(st.st_ino) == inode { try? Sys.unlinkIfPresent(path) }
        Sys.close(listenFD)
    }

    deinit { stop() }

    /// The server's counters (connections accepted, refused, evicted, timed out, open now).
    public func stats() -> Stats { loop.statsValue.withLock { $0 } }

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
