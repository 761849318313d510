#if canImport(Glibc)
import Core
import Glibc
#endif

/// The thin syscall layer under the control and UAPI sockets: every call retries `EINTR`, waits
/// with `poll` against a monotonic deadline, and reports errno values instead of crashing.
enum SocketIO {
    /// An errno value as an `Error`.
    struct Errno: Error, Equatable {
        var code: Int32
        init(_ code: Int32) { self.code = code }
    }

    /// Milliseconds on the monotonic clock.
    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Milliseconds in a `Duration` (saturating at Int64 range).
    static func ms(_ d: Duration) -> Int64 {
        let (s, atto) = d.components
        return s * 1000 + atto / 1_000_000_000_000_000
    }

    /// A `sockaddr_un` for `path`, or nil when the path does not fit `sun_path` (107 bytes).
    static func address(_ path: String) -> sockaddr_un? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            p.copyBytes(from: bytes)
            p[bytes.count] = 0
        }
        return addr
    }

    /// A new `AF_UNIX` stream socket with close-on-exec, or the errno.
    static func streamSocket() -> Result<Int32, Errno> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// Connects a new socket to `path`; returns the descriptor or the errno (`ENAMETOOLONG` when
    /// the path does not fit).
    static func connect(path: String) -> Result<Int32, Errno> {
        guard var addr = address(path) else { return .failure(Errno(ENAMETOOLONG)) }
        let fd: Int32
        switch streamSocket() {
        case .success(let f): fd = f
        case .failure(let e): return .failure(e)
        }
        let len = socklen_t(MemoryLayout<sockaddr_un>.size)
        while true {
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, len) }
            }
            if rc == 0 { return .success(fd) }
            let e = errno
            if e == EINTR { continue }
            close(fd)
            return .failure(Errno(e))
        }
    }

    /// Creates a listening socket at `path` with mode `mode` (and group `gid` when given).
    ///
    /// An existing file at `path` is handled like this: a socket nobody accepts on (connect gives
    /// `ECONNREFUSED`) is stale and removed; a socket somebody is listening on is an error
    /// ("already in use"); anything that is not a socket is never removed (error).
    /// The socket's inode is fchmod'ed to 0600 before `bind` (Linux creates the file with the
    /// socket inode's mode less the umask, so it is never more open than 0600, even briefly),
    /// then the file is chmod'ed to `mode`. The process umask is left alone: changing it would
    /// race with files other threads create.
    static func listen(path: String, mode: mode_t, gid: UInt32?, backlog: Int32 = 16) throws(SocketError) -> Int32 {
        guard var addr = address(path) else {
            throw SocketError(operation: "bind", path: path, errno: ENAMETOOLONG, detail: "socket paths are limited to 107 bytes")
        }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFSOCK else {
                throw SocketError(operation: "bind", path: path, errno: EEXIST, detail: "a file that is not a socket is in the way; remove it")
            }
            switch connect(path: path) {
            case .success(let fd):
                close(fd)
                throw SocketError(operation: "bind", path: path, errno: EADDRINUSE, detail: "another process is listening on it; is tunneld already running?")
            case .failure(let e) where e.code == ECONNREFUSED || e.code == ENOENT:
                unlink(path)  // stale: left behind by a process that died
            case .failure(let e):
                throw SocketError(operation: "connect (stale check)", path: path, errno: e.code)
            }
        }
        let fd: Int32
        switch streamSocket() {
        case .success(let f): fd = f
        case .failure(let e): throw SocketError(operation: "socket", path: path, errno: e.code)
        }
        let len = socklen_t(MemoryLayout<sockaddr_un>.size)
        _ = fchmod(fd, 0o600)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
        }
        let bindErrno = errno
        guard rc == 0 else {
            close(fd)
            throw SocketError(operation: "bind", path: path, errno: bindErrno)
        }
        if let gid, chown(path, uid_t.max, gid) != 0 {
            let e = errno
            close(fd); unlink(path)
            throw SocketError(operation: "chown", path: path, errno: e)
        }
        if chmod(path, mode) != 0 {
            let e = errno
            close(fd); unlink(path)
            throw SocketError(operation: "chmod", path: path, errno: e)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let e = errno
            close(fd); unlink(path)
            throw SocketError(operation: "listen", path: path, errno: e)
        }
        return fd
    }

    /// Waits until `fd` is readable (`events = POLLIN`) or writable (`POLLOUT`) or the deadline
    /// passes. Returns false on timeout.
    static func wait(_ fd: Int32, events: Int16, deadlineMs: Int64) -> Bool {
        while true {
            let left = deadlineMs - nowMs()
            if left <= 0 { return false }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&p, 1, Int32(min(left, 60_000)))
            if rc > 0 { return true }
            if rc < 0 && errno != EINTR { return true }  // let the next call report the error
        }
    }

    /// Writes all of `bytes` before the deadline; returns 0 or the errno (`ETIMEDOUT` on timeout).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], deadlineMs: Int64) -> Int32 {
        var offset = 0
        while offset < bytes.count {
            guard wait(fd, events: Int16(POLLOUT), deadlineMs: deadlineMs) else { return ETIMEDOUT }
            let n = bytes.withUnsafeBytes { p in
                send(fd, p.baseAddress! + offset, p.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n < 0 {
                let e = errno
                if e == EINTR || e == EAGAIN || e == EWOULDBLOCK { continue }
                return e
            }
            offset += n
        }
        return 0
    }

    /// The `SO_PEERCRED` credentials of a connected socket, or nil.
    static func peerCredentials(_ fd: Int32) -> PeerCredentials? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (socket(7)); declared here because
        // Glibc exposes it only under _GNU_SOURCE.
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &raw, &len) == 0, len == 12 else { return nil }
        return PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2)
    }

    /// Accepts one connection (close-on-exec), or nil on error (`EAGAIN`, `ECONNABORTED`, …).
    static func accept(_ fd: Int32) -> Int32? {
        while true {
            let c = Glibc.accept(fd, nil, nil)
            if c >= 0 {
                _ = fcntl(c, F_SETFD, FD_CLOEXEC)
                return c
            }
            if errno == EINTR { continue }
            return nil
        }
    }
}
