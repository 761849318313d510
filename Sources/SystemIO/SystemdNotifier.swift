import CShims
import Core
import Glibc
import Runtime

/// systemd's notification protocol (sd_notify(3)): newline-separated `KEY=VALUE` assignments
/// (`READY=1`, `STATUS=…`, `WATCHDOG=1`, `RELOADING=1`, `STOPPING=1`) sent as one datagram to
/// the AF_UNIX socket named by `NOTIFY_SOCKET` — a path, or an abstract name written with a
/// leading `@`. A service started without `NOTIFY_SOCKET` has no notifier (every send is a
/// no-op for the caller to skip).
public final class SystemdNotifier: Sendable {
    private let fd: Int32
    private let address: sockaddr_un
    private let length: socklen_t
    /// The socket as given in `NOTIFY_SOCKET`.
    public let socketName: String

    /// A notifier for `NOTIFY_SOCKET` (`environment`: for tests); nil when it is unset or empty.
    /// Throws when it names no usable AF_UNIX address or no socket can be made.
    public init?(environment: [String: String]) throws(SystemError) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return nil }
        guard name.hasPrefix("/") || name.hasPrefix("@"), name.utf8.count < 108 else {
            throw SystemError("NOTIFY_SOCKET=\(name) (not a path or @abstract name of at most 107 bytes)", errno: EINVAL)
        }
        var a = sockaddr_un()
        a.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &a.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            if bytes.first == UInt8(ascii: "@") { raw[0] = 0 }  // abstract namespace
        }
        address = a
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == UInt8(ascii: "@") ? 0 : 1))
        fd = try Sys.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), "NOTIFY_SOCKET")
        socketName = name
    }

    deinit { Sys.close(fd) }

    /// Sends `assignments` (`READY=1`, `STATUS=…`, joined by newlines) as one datagram.
    public func send(_ assignments: [String]) throws(SystemError) {
        var text = assignments.joined(separator: "\n")
        var address = self.address
        let length = self.length
        let fd = self.fd
        let sent = text.withUTF8 { body in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.sendto(fd, body.baseAddress, body.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        if sent < 0 { try Sys.fail("sendto(NOTIFY_SOCKET \(socketName))", errno) }
    }

    /// The watchdog period systemd expects `WATCHDOG=1` within (`WATCHDOG_USEC`, for this process
    /// when `WATCHDOG_PID` names it or is unset); nil without a watchdog.
    public static func watchdogMicroseconds(environment: [String: String], pid: Int32 = getpid()) -> UInt64? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], Int32(owner) != pid { return nil }
        return usec
    }

    /// `MONOTONIC_USEC=` for `RELOADING=1` (CLOCK_MONOTONIC, as systemd requires).
    public static func monotonicMicroseconds() -> UInt64 { SystemClock().monotonicNanoseconds() / 1000 }
}
