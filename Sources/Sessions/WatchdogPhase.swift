import Core
/// Where a peer stands at a given wall-clock time (docs/session.md).
public enum WatchdogPhase: Sendable, Hashable {
    /// Premium: never limited.
    case unlimited
    /// Free, no stored window: the next connect opens one.
    case noWindow
    /// Free, `now < allowedUntil`: may be connected until then.
    case inWindow(WindowDates)
    /// Free, `allowedUntil <= now < reconnectAt`: refused.
    case paused(WindowDates)
    /// Free, `reconnectAt <= now`: the pause is over; the next connect opens a new window.
    case pauseOver(WindowDates)
}
