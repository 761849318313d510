import Core
import Gateway
import Synchronization

/// A ``GatewayClock`` that tests move by hand. Both clocks start at fixed values (monotonic 1 s,
/// wall 2026-01-01T00:00:00Z) so outputs are reproducible.
///
/// ``advance(by:)`` moves both clocks (time passing, including a suspend: the monotonic clock is
/// `CLOCK_BOOTTIME`-like); ``setWall(milliseconds:)`` steps only the wall clock (an NTP step or
/// `date -s`), which is what ``ClockChangeWatcher`` reports on a real system.
public final class ManualClock: GatewayClock {
    /// Monotonic ns, wall ns, number of wall steps.
    private let state: Mutex<(mono: UInt64, wall: Int64, steps: Int)>

    /// 2026-01-01T00:00:00Z in Unix epoch milliseconds.
    public static let defaultWallStart: Int64 = 1_767_225_600_000

    /// A clock at the given start values.
    public init(monotonicNanoseconds: UInt64 = 1_000_000_000, wallMilliseconds: Int64 = ManualClock.defaultWallStart) {
        state = Mutex((monotonicNanoseconds, wallMilliseconds * 1_000_000, 0))
    }

    public func monotonicNanoseconds() -> UInt64 { state.withLock { $0.mono } }
    public func wallNanoseconds() -> Int64 { state.withLock { $0.wall } }

    /// Moves both clocks forward by `duration` (must not be negative).
    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        precondition(seconds >= 0 && attoseconds >= 0, "ManualClock: time does not run backwards")
        let nanos = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
        state.withLock { s in
            s.mono += nanos
            s.wall += Int64(nanos)
        }
    }

    /// Sets the wall clock to `milliseconds` (forwards or backwards) without moving the monotonic one.
    public func setWall(milliseconds: Int64) {
        state.withLock { s in
            s.wall = milliseconds * 1_000_000
            s.steps += 1
        }
    }

    /// How many times the wall clock was stepped with ``setWall(milliseconds:)``.
    public var wallSteps: Int { state.withLock { $0.steps } }
}
