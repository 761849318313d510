import Core
/// Why the watchdog ticks now (docs/session.md).
public enum TickReason: String, Sendable, Hashable {
    /// The `WatchdogInterval` passed.
    case interval
    /// The wall clock was set (timerfd with `TFD_TIMER_CANCEL_ON_SET` fired).
    case clockChanged = "clock-changed"
    /// The machine resumed from suspend (`CLOCK_BOOTTIME` ran ahead of `CLOCK_MONOTONIC`).
    case resume

    /// Pure check for a resume: between two ticks the boot-time clock (which counts suspend)
    /// advanced more than the monotonic one (which does not) by over `toleranceNs`.
    public static func isResume(bootDeltaNs: UInt64, monotonicDeltaNs: UInt64, toleranceNs: UInt64 = 1_000_000_000) -> Bool {
        bootDeltaNs > monotonicDeltaNs && bootDeltaNs - monotonicDeltaNs > toleranceNs
    }
}
