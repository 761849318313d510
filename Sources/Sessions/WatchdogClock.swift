import Core

/// The watchdog's time (docs/session.md, "Clock steps"): wall-clock dates, as the store keeps them
/// and people read them, that advance with `CLOCK_BOOTTIME` (counts suspend, never steps) between
/// two readings of the wall clock. Pure: the caller reads both clocks and passes the readings.
///
/// `now(bootMs:)` is `offset + boot`, where `offset` is wall − boot at the last sync. A wall clock
/// that steps (settimeofday, NTP's first correction, a wrong RTC at boot) does not move it; the
/// next `sync` sees the step (the wall reading differs from `now` by more than the tolerance),
/// adopts the new offset and returns the step, which the watchdog then applies to every stored
/// date so the *remaining real time* of each window and pause is unchanged. Slow NTP slewing
/// (≤ 0.5 ms/s) shows up, at most once per ~2000 s, as a step of about the tolerance: harmless.
public struct WatchdogClock: Sendable, Equatable {
    /// wall − boot (ms) at the last sync.
    public private(set) var offsetMs: Int64
    /// A wall reading this far (ms) from `now` is a step.
    public let toleranceMs: Int64

    /// A clock in step with the wall reading `wallMs` taken at boot-clock reading `bootMs`.
    public init(wallMs: Int64, bootMs: Int64, toleranceMs: Int64 = 1_000) {
        offsetMs = wallMs &- bootMs
        self.toleranceMs = toleranceMs
    }

    /// The watchdog's now at boot-clock reading `bootMs`.
    public func now(bootMs: Int64) -> Int64 { offsetMs &+ bootMs }

    /// Compares a wall reading with `now`: when they differ by more than the tolerance, the wall
    /// clock stepped by the returned amount (positive: forward) and the clock follows it from
    /// now on; nil otherwise.
    public mutating func sync(wallMs: Int64, bootMs: Int64) -> Int64? {
        let step = wallMs &- now(bootMs: bootMs)
        guard step > toleranceMs || step < -toleranceMs else { return nil }
        offsetMs = wallMs &- bootMs
        return step
    }
}

/// How the stored dates meet the wall clock when the daemon starts (a restart, or a reboot that
/// reset the boot clock): the case table of docs/session.md, "Across a restart".
public enum StartClock: Sendable, Hashable {
    /// No heartbeat, or the wall clock is at or after it (by less than `farAheadMs`): the stored
    /// dates stand; the time the daemon was down counts as real time.
    case trusted
    /// The wall clock is behind the last heartbeat by this much (ms, positive): the clock went
    /// backwards across the restart. The stored dates move back by it, so every window and pause
    /// has exactly what it had left at the heartbeat: no free time, no pause shortened.
    case behind(Int64)
    /// The wall clock is ahead of the last heartbeat by this much (ms, more than `farAheadMs`):
    /// kept (a long downtime cannot be told from a clock set wrong), but logged loudly.
    case farAhead(Int64)

    /// One day: a downtime longer than this is worth a warning.
    public static let farAheadMs: Int64 = 86_400_000

    /// The case for a start at wall time `wallMs` after the last proven-alive time `heartbeatMs`.
    public static func at(wallMs: Int64, heartbeatMs: Int64?, farAheadMs: Int64 = StartClock.farAheadMs) -> StartClock {
        guard let hb = heartbeatMs else { return .trusted }
        if wallMs < hb { return .behind(hb &- wallMs) }
        if wallMs &- hb > farAheadMs { return .farAhead(wallMs &- hb) }
        return .trusted
    }

    /// What to add to every stored date at this start.
    public var shiftMs: Int64 {
        if case .behind(let ms) = self { return -ms }
        return 0
    }
}

extension WindowDates {
    /// Both dates moved by `ms` (a wall-clock step, or a start behind the heartbeat).
    public func shifted(by ms: Int64) -> WindowDates {
        WindowDates(allowedUntil: allowedUntil &+ ms, reconnectAt: reconnectAt &+ ms)
    }
}
