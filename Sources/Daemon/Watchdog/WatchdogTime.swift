import Core
import Runtime
import Sessions
import Synchronization

/// The watchdog's clock in the daemon: a `WatchdogClock` over the engine's `TimeSource`. `now()`
/// is wall-clock ms that advance with CLOCK_BOOTTIME and never step; `sync()` (the ticker calls
/// it first on every tick, and on every clock-change wake-up) compares it with the wall clock and
/// returns a step to apply to the stored dates.
public final class WatchdogTime: Sendable {
    let clock: any TimeSource
    private let state: Mutex<WatchdogClock>

    /// In step with `clock`'s wall clock now.
    public init(clock: any TimeSource, toleranceMs: Int64 = 1_000) {
        self.clock = clock
        state = Mutex(WatchdogClock(wallMs: clock.wallMilliseconds(), bootMs: WatchdogTime.bootMs(clock), toleranceMs: toleranceMs))
    }

    static func bootMs(_ clock: any TimeSource) -> Int64 { Int64(clock.boottimeNanoseconds() / 1_000_000) }

    /// The watchdog's now (epoch ms).
    public func now() -> Int64 {
        let boot = WatchdogTime.bootMs(clock)
        return state.withLock { $0.now(bootMs: boot) }
    }

    /// The wall clock's step since the last sync (ms, positive: forward), or nil.
    public func sync() -> Int64? {
        let boot = WatchdogTime.bootMs(clock)
        let wall = clock.wallMilliseconds()
        return state.withLock { $0.sync(wallMs: wall, bootMs: boot) }
    }
}
