import Core
import Runtime
import Synchronization

/// A ``TimeSource`` that tests move by hand. The clocks start at fixed values (monotonic and
/// boottime 1 s, wall 2026-01-01T00:00:00Z) so outputs are reproducible.
///
/// ``advance(by:)`` moves every clock (time passing); ``suspend(for:)`` moves boottime and the wall
/// clock but not the monotonic clock (a suspend and resume); ``setWall(milliseconds:)`` steps only
/// the wall clock (an NTP step or `date -s`), which is what `ClockChangeWatcher` reports on a real
/// system.
public final class ManualClock: TimeSource {
    /// Monotonic ns, boottime ns, wall ns, number of wall steps.
    private let state: Mutex<(mono: UInt64, boot: UInt64, wall: Int64, steps: Int)>

    /// 2026-01-01T00:00:00Z in Unix epoch milliseconds.
    public static let defaultWallStart: Int64 = 1_767_225_600_000

    /// A clock at the given start values (boottime starts with the monotonic clock).
    public init(monotonicNanoseconds: UInt64 = 1_000_000_000, wallMilliseconds: Int64 = ManualClock.defaultWallStart) {
        state = Mutex((monotonicNanoseconds, monotonicNanoseconds, wallMilliseconds * 1_000_000, 0))
    }

    public func monotonicNanoseconds() -> UInt64 { state.withLock { $0.mono } }
    public func boottimeNanoseconds() -> UInt64 { state.withLock { $0.boot } }
    public func wallNanoseconds() -> Int64 { state.withLock { $0.wall } }

    /// Moves every clock forward by `duration` (must not be negative).
    public func advance(by duration: Duration) {
        let nanos = ManualClock.nanoseconds(duration)
        state.withLock { s in
            s.mono += nanos
            s.boot += nanos
            s.wall += Int64(nanos)
        }
    }

    /// A suspend of `duration`: boottime and the wall clock move, the monotonic clock does not.
    public func suspend(for duration: Duration) {
        let nanos = ManualClock.nanoseconds(duration)
        state.withLock { s in
            s.boot += nanos
            s.wall += Int64(nanos)
        }
    }

    /// Sets the wall clock to `milliseconds` (forwards or backwards) without moving the others.
    public func setWall(milliseconds: Int64) {
        state.withLock { s in
            s.wall = milliseconds * 1_000_000
            s.steps += 1
        }
    }

    /// How many times the wall clock was stepped with ``setWall(milliseconds:)``.
    public var wallSteps: Int { state.withLock { $0.steps } }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        precondition(seconds >= 0 && attoseconds >= 0, "ManualClock: time does not run backwards")
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
