import ControlProtocol
import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// One thread accepting connections on a listening Unix socket and handing each connection,
/// with its `SO_PEERCRED` credentials, to a closure on that same thread (connections are served
/// one at a time; each has a deadline, so a stuck client delays others by at most that long).
/// `stop()` wakes the thread through an `EventNotifier`, joins it, closes the socket and removes
/// the socket file if it is still the one this listener created.
///
/// `@unchecked Sendable`: the descriptors are immutable after `init`; `thread`/`stopped` are
/// guarded by `lock`; the closure is `@Sendable`.
final class SocketListener: @unchecked Sendable {
    let fd: Int32
    let path: String
    private let inode: UInt
    private let shutdown: EventNotifier
    private let lock = ConditionLock()
    private var thread: WorkerThread?
    private var stopped = false
    private let serve: @Sendable (Int32, PeerCredentials?) -> Void

    /// Binds and listens at `path` (see `SocketIO.listen`); does not start the thread yet.
    init(path: String, mode: mode_t, gid: UInt32?, serve: @escaping @Sendable (Int32, PeerCredentials?) -> Void) throws(SocketError) {
        let fd = try SocketIO.listen(path: path, mode: mode, gid: gid)
        do {
            shutdown = try EventNotifier()
        } catch {
            Sys.close(fd)
            try? Sys.unlinkIfPresent(path)
            throw .system(error)
        }
        self.fd = fd
        self.path = path
        inode = Sys.statIfPresent(path).map { UInt($0.st_ino) } ?? 0
        self.serve = serve
    }

    /// Starts the accepting thread (once).
    func start(name: String) {
        lock.withLock {
            guard thread == nil, !stopped else { return }
            thread = WorkerThread(name: name) { [self] in run() }
        }
    }

    private func run() {
        while true {
            let ready: WaitResult
            do { ready = try Readiness.wait((fd, nil), shutdown, timeoutMilliseconds: -1) } catch { return }
            if ready == .closed { return }
            guard let c = try? Sys.accept(fd, path) else { continue }  // ECONNABORTED and the like
            serve(c, SocketIO.peerCredentials(c))
            Sys.close(c)
        }
    }

    /// Stops the thread (waiting for the connection in progress), closes the socket and removes
    /// its file. Safe to call more than once.
    func stop() {
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
        Sys.close(fd)
    }

    deinit { stop() }
}
