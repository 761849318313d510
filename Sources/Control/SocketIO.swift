import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The control and UAPI sockets' use of `Sys`: every call retries `EINTR` and throws
/// `SystemError`; waits use `poll` against a monotonic deadline.
enum SocketIO {
    /// Milliseconds on the monotonic clock.
    static func nowMs() -> Int64 {
        Int64(SystemClock().monotonicNanoseconds() / 1_000_000)
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

    /// A new `AF_UNIX` stream socket with close-on-exec.
    static func streamSocket(_ path: String) throws(SystemError) -> Int32 {
        try Sys.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), path)
    }

    /// Connects a new socket to `path` and returns it (`ENAMETOOLONG` when the path does not fit).
    static func connect(path: String) throws(SystemError) -> Int32 {
        guard let addr = address(path) else { throw SystemError("connect(\(path))", errno: ENAMETOOLONG) }
        let fd = try streamSocket(path)
        do {
            try Sys.connect(fd, addr, path)
        } catch {
            Sys.close(fd)
            throw error
        }
        return fd
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
        guard let addr = address(path) else { throw .pathTooLong(path: path) }
        if let st = try? Sys.lstat(path) {
            guard st.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
            switch Result(catching: { () throws(SystemError) in try connect(path: path) }) {
            case .success(let fd):
                Sys.close(fd)
                throw .inUse(path: path)
            case .failure(let e) where e.errno == ECONNREFUSED || e.errno == ENOENT:
                try? Sys.unlinkIfPresent(path)  // stale: left behind by a process that died
            case .failure(let e):
                throw .system(e)
            }
        }
        let fd: Int32
        do { fd = try streamSocket(path) } catch { throw .system(error) }
        try? Sys.fchmod(fd, 0o600, path)
        do {
            try Sys.bind(fd, addr, path)
        } catch {
            Sys.close(fd)
            throw .system(error)
        }
        do {
            if let gid { try Sys.chgrp(path, gid) }
            try Sys.chmod(path, mode)
            try Sys.listen(fd, backlog: backlog, path)
        } catch {
            Sys.close(fd)
            try? Sys.unlinkIfPresent(path)
            throw .system(error)
        }
        return fd
    }

    /// Waits until `fd` is readable (`events = POLLIN`) or writable (`POLLOUT`) or the deadline
    /// passes. Returns false on timeout.
    static func wait(_ fd: Int32, events: Int16, deadlineMs: Int64) -> Bool {
        while true {
            let left = deadlineMs - nowMs()
            if left <= 0 { return false }
            do {
                if try Sys.poll(fd, events: events, timeoutMilliseconds: Int32(min(left, 60_000)), "socket") { return true }
            } catch {
                return true  // let the next call report the error
            }
        }
    }

    /// Writes all of `bytes` to the socket at `path` before the deadline; false on timeout.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], deadlineMs: Int64, path: String) throws(SystemError) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard wait(fd, events: Int16(POLLOUT), deadlineMs: deadlineMs) else { return false }
            let sent = bytes.withUnsafeBytes { p in
                Result { () throws(SystemError) in try Sys.sendNonblocking(fd, UnsafeRawBufferPointer(rebasing: p[offset...]), path) }
            }
            offset += try sent.get() ?? 0
        }
        return true
    }

    /// The `SO_PEERCRED` credentials of a connected socket, or nil.
    static func peerCredentials(_ fd: Int32) -> PeerCredentials? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (socket(7)); declared here because
        // Glibc exposes it only under _GNU_SOURCE.
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard (try? Sys.call("getsockopt(SO_PEERCRED)") { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &raw, &len) }) != nil,
              len == 12 else { return nil }
        return PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2)
    }
}
