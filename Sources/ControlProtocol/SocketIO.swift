import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The control and UAPI sockets' use of `Sys`: every call retries `EINTR` and throws
/// `SystemError`; waits use `poll` against a monotonic deadline. The client's side is here;
/// the daemon's servers add `listen` and `peerCredentials` (`Daemon/Servers/SocketIO+Listen.swift`).
public enum SocketIO {
    /// Milliseconds on the monotonic clock.
    public static func nowMs() -> Int64 {
        Int64(SystemClock().monotonicNanoseconds() / 1_000_000)
    }

    /// Milliseconds in a `Duration` (saturating at Int64 range).
    public static func ms(_ d: Duration) -> Int64 {
        let (s, atto) = d.components
        return s * 1000 + atto / 1_000_000_000_000_000
    }

    /// A `sockaddr_un` for `path`, or nil when the path does not fit `sun_path` (107 bytes).
    public static func address(_ path: String) -> sockaddr_un? {
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
    public static func streamSocket(_ path: String) throws(SystemError) -> Int32 {
        try Sys.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), path)
    }

    /// Connects a new socket to `path` and returns it (`ENAMETOOLONG` when the path does not fit).
    public static func connect(path: String) throws(SystemError) -> Int32 {
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

    /// Waits until `fd` is readable (`events = POLLIN`) or writable (`POLLOUT`) or the deadline
    /// passes. Returns false on timeout.
    public static func wait(_ fd: Int32, events: Int16, deadlineMs: Int64) -> Bool {
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
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], deadlineMs: Int64, path: String) throws(SystemError) -> Bool {
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
}
