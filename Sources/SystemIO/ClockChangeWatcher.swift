import Core
import CShims
import Glibc
import Runtime

/// Notices when the wall clock is set discontinuously (an NTP step, `date -s`, a restored RTC):
/// a `CLOCK_REALTIME` timerfd armed with `TFD_TIMER_CANCEL_ON_SET` (timerfd_create(2)), whose read
/// fails with `ECANCELED` after such a change. The free-session watchdog re-checks its windows then
/// (docs/session.md) instead of waiting for its next tick.
///
/// Poll ``descriptor`` (or call ``wait(timeoutMilliseconds:)``), then call ``consumeChange()``.
/// One thread waits on it at a time.
public final class ClockChangeWatcher: Sendable {
    /// The timerfd (nonblocking); it becomes readable when the clock was set.
    public let descriptor: Int32

    /// Creates and arms the timer.
    public init() throws(SystemError) {
        descriptor = try Sys.shim("timerfd(CLOCK_REALTIME, TFD_TIMER_CANCEL_ON_SET)") { tv_clock_change_timerfd() }
    }

    deinit { Sys.close(descriptor) }

    /// True (and re-armed) when the wall clock was set since the last call; false when not.
    public func consumeChange() throws(SystemError) -> Bool {
        var expirations: UInt64 = 0
        do {
            // A read (the far-future expiry itself) or nothing to read: not a clock step.
            _ = try Sys.callNonblocking("read(clock change timerfd)") { Glibc.read(descriptor, &expirations, 8) }
            return false
        } catch where error.errno == ECANCELED {
            _ = try Sys.shim("timerfd_settime(clock change)") { tv_clock_change_rearm(descriptor) }
            return true
        }
    }

    /// Waits until the clock is set, `shutdown` fires, or the timeout passes (-1 = forever); returns
    /// `.readable` for a clock change (already consumed and re-armed).
    public func wait(timeoutMilliseconds: Int32, shutdown: EventNotifier) throws(SystemError) -> WaitResult {
        let r = try Readiness.wait((descriptor, nil), shutdown, timeoutMilliseconds: timeoutMilliseconds)
        if r == .readable { return try consumeChange() ? .readable : .timedOut }
        return r
    }
}
