import Core
/// The free-session watchdog's settings (DESIGN.md §4, §6), in milliseconds.
public struct WatchdogConfig: Sendable, Equatable {
    /// Connected time per window (`FreeSession`).
    public var freeSessionMs: Int64
    /// Pause after the window (`FreePause`).
    public var freePauseMs: Int64
    /// A session with no handshake for this long ended `idle` (WireGuard's REJECT_AFTER_TIME, 180 s).
    public var idleMs: Int64
    /// Tick period (`WatchdogInterval`).
    public var intervalMs: Int64

    /// Settings from their parts.
    public init(freeSessionMs: Int64, freePauseMs: Int64, idleMs: Int64 = 180_000, intervalMs: Int64 = 5_000) {
        self.freeSessionMs = freeSessionMs
        self.freePauseMs = freePauseMs
        self.idleMs = idleMs
        self.intervalMs = intervalMs
    }
}
