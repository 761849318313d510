import ControlProtocol
import Core
import Runtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's Unix-socket server: one thread (`SocketEventLoop`) listens on every endpoint
/// (normally `control.sock` and `/var/run/wireguard/<Name>.sock`) and drives each connection
/// through its endpoint's protocol handler (`ControlProtocolHandler`, `UAPIProtocolHandler`).
/// The protocols are pure (`ControlProtocol`); this only moves bytes, checks callers and keeps
/// time.
///
/// `@unchecked Sendable`: `endpoints`, `listeners`, `loop` and `shutdown` are immutable after
/// `init`; `thread`/`stopped` are guarded by `lock`; the counters are behind a `Mutex`.
public final class UnixSocketServer: @unchecked Sendable {
    /// The endpoints served, in the order given.
    public let endpoints: [SocketEndpoint]
    private let listeners: [(fd: Int32, inode: UInt)]
    private let shutdown: EventNotifier
    private let loop: SocketEventLoop
    private let lock = ConditionLock()
    private var thread: WorkerThread?
    private var stopped = false

    /// Creates every endpoint's socket (stale sockets replaced; a live one is an error) and
    /// starts the one thread serving them all, named `threadName`.
    /// - Throws: the first endpoint's `SocketError`; the sockets already made are removed.
    public init(endpoints: [SocketEndpoint], threadName: String = "tunneld-sockets") throws(SocketError) {
        var made: [(fd: Int32, inode: UInt)] = []
        func undo() {
            for (i, l) in made.enumerated() {
                Sys.close(l.fd)
                try? Sys.unlinkIfPresent(endpoints[i].path)
            }
        }
        for e in endpoints {
            do {
                try e.prepare()
                let fd = try SocketIO.listen(path: e.path, mode: e.mode, gid: e.gid, backlog: e.backlog)
                made.append((fd, Sys.statIfPresent(e.path).map { UInt($0.st_ino) } ?? 0))
                // The loop accepts until EAGAIN, so a listening socket must not block.
                _ = try Sys.call("fcntl(\(e.path), O_NONBLOCK)") { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
            } catch let error as SocketError {
                undo()
                throw error
            } catch {
                undo()
                throw .system(error as? SystemError ?? SystemError("listen(\(e.path))", errno: EIO))
            }
        }
        do {
            shutdown = try EventNotifier()
        } catch {
            undo()
            throw .system(error)
        }
        self.endpoints = endpoints
        listeners = made
        loop = SocketEventLoop(endpoints: endpoints, listenFDs: made.map(\.fd), shutdown: shutdown)
        let loop = self.loop
        let thread = WorkerThread(name: threadName) { loop.run() }
        lock.withLock { self.thread = thread }
    }

    /// Stops serving (closing every open connection) and removes each socket file that is still
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
        for (i, l) in listeners.enumerated() {
            let path = endpoints[i].path
            if let st = Sys.statIfPresent(path), UInt(st.st_ino) == l.inode { try? Sys.unlinkIfPresent(path) }
            Sys.close(l.fd)
        }
    }

    deinit { stop() }

    /// The counters of the endpoint at `index` (in `endpoints`).
    public func stats(_ index: Int) -> Stats { loop.stats[index].get() }

    /// The counters of the endpoint at `path`.
    public func stats(path: String) -> Stats? { endpoints.firstIndex { $0.path == path }.map(stats) }

    /// The thread id of the loop (tests check that one thread serves every endpoint).
    var loopThreadID: UInt64? { loop.threadID.withLock { $0 } }
}
