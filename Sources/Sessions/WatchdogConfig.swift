import Core
/// The free-session watchdog's own settings (tunneld.conf(5), docs/session.md), in milliseconds. The window
/// lengths are not here: every tier's session and pause (`FreeSession`/`FreePause` are the `free`
/// tier's) live in `TierClasses`, their one owner.
public struct WatchdogConfig: Sendable, Equatable {
    /// A session with no handshake for this long ended `idle` (WireGuard's REJECT_AFTER_TIME, 180 s).
    public var idleMs: Int64
    /// Tick period (`WatchdogInterval`).
    public var intervalMs: Int64

    /// Settings from their parts.
    public init(idleMs: Int64 = 180_000, intervalMs: Int64 = 5_000) {
        self.idleMs = idleMs
        self.intervalMs = intervalMs
    }
}
