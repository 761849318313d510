import Core
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One thread accepting connections on a listening Unix socket and handing each connection,
/// with its `SO_PEERCRED` credentials, to a closure on that same thread (connections are served
/// one at a time; each has a deadline, so a stuck client delays others by at most that long).
/// `stop()` wakes the thread through a pipe, waits for it, closes the socket and removes the
/// socket file if it is still the one this listener created.
///
/// `@unchecked Sendable`: the descriptors are immutable after `init`; `started`/`stopped` are
/// guarded by `lock`; the closure is `@Sendable`.
final class SocketListener: @unchecked Sendable {
    let fd: Int32
    let path: String
    private let inode: UInt
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var started = false
    private var stopped = false
    private let serve: @Sendable (Int32, PeerCredentials?) -> Void

    /// Binds and listens at `path` (see `SocketIO.listen`); does not start the thread yet.
    init(path: String, mode: mode_t, gid: UInt32?, serve: @escaping @Sendable (Int32, PeerCredentials?) -> Void) throws(SocketError) {
        self.fd = try SocketIO.listen(path: path, mode: mode, gid: gid)
        self.path = path
        var st = stat()
        inode = fstat(fd, &st) == 0 && stat(path, &st) == 0 ? UInt(st.st_ino) : 0
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            let e = errno
            close(fd)
            unlink(path)
            throw SocketError(operation: "pipe", path: path, errno: e)
        }
        for f in fds {
            _ = fcntl(f, F_SETFD, FD_CLOEXEC)
            _ = fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        self.serve = serve
    }

    /// Starts the accepting thread (once).
    func start(name: String) {
        lock.lock()
        defer { lock.unlock() }
        guard !started, !stopped else { return }
        started = true
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    private func run() {
        defer { finished.signal() }
        while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let rc = poll(&fds, 2, -1)
            if rc < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            if fds[0].revents & Int16(POLLIN) != 0, let c = SocketIO.accept(fd) {
                serve(c, SocketIO.peerCredentials(c))
                close(c)
            }
        }
    }

    /// Stops the thread (waiting for the connection in progress), closes the socket and removes
    /// its file. Safe to call more than once.
    func stop() {
        lock.lock()
        if stopped {
            lock.unlock()
            return
        }
        stopped = true
        let wasStarted = started
        lock.unlock()
        if wasStarted {
            var one: UInt8 = 1
            _ = write(wakeWrite, &one, 1)
            finished.wait()
        }
        var st = stat()
        if stat(path, &st) == 0, UInt(st.st_ino) == inode { unlink(path) }
        close(fd)
        close(wakeRead)
        close(wakeWrite)
    }

    deinit { stop() }
}
