import Core
import CShims
import Glibc

/// An `eventfd(2)` used to wake a thread blocked in ``Readiness/wait(_:_:timeoutMilliseconds:)``:
/// shutdown of a TUN device or bind, "queue has work" in the in-memory fakes.
///
/// Thread-safe: `signal()` and `drain()` are single system calls on a descriptor that lives as long
/// as the object.
public final class EventNotifier: Sendable {
    /// The eventfd (nonblocking, close-on-exec); poll it for readability.
    public let descriptor: Int32

    /// Creates the eventfd.
    public init() throws(SystemError) {
        descriptor = try Sys.shim("eventfd") { tv_eventfd(0) }
    }

    deinit { Sys.close(descriptor) }

    /// Makes the descriptor readable until the next ``drain()``.
    public func signal() {
        var one: UInt64 = 1
        // Only fails with EAGAIN when the counter would overflow, which means it is already readable.
        _ = try? Sys.callNonblocking("write(eventfd)") { Glibc.write(descriptor, &one, 8) }
    }

    /// Resets the counter; returns true when it had been signalled.
    @discardableResult
    public func drain() -> Bool {
        var value: UInt64 = 0
        let n = try? Sys.callNonblocking("read(eventfd)") { Glibc.read(descriptor, &value, 8) }
        return n == 8
    }

    /// True when signalled and not drained (does not drain).
    public var isSignalled: Bool {
        var p = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return (try? Sys.call("poll(eventfd)") { poll(&p, 1, 0) }) == 1
    }
}
