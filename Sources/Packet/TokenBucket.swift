/// A token bucket in exact integer arithmetic (rate shaping and new-flow rate). Pure:
/// time comes in as `now` (monotonic nanoseconds). Units are whatever the caller counts (bytes
/// for shaping, flows for `NewFlowRate`). Credit is kept in unit·nanoseconds, so refills of any
/// length lose nothing to rounding.
public struct TokenBucket: Sendable, Equatable {
    /// Units added per second.
    public let ratePerSecond: UInt64
    /// Most units the bucket holds (the burst).
    public let burst: UInt64
    /// Credit in unit·ns (units × 10⁹).
    public internal(set) var credit: UInt64
    /// Time of the last refill.
    public internal(set) var last: UInt64

    /// A full bucket at `now`. - Precondition: `ratePerSecond > 0`, `burst > 0`, `burst < 2^33`.
    public init(ratePerSecond: UInt64, burst: UInt64, now: UInt64) {
        precondition(ratePerSecond > 0 && burst > 0 && burst < 1 << 33, "TokenBucket: bad rate or burst")
        self.ratePerSecond = min(ratePerSecond, 1 << 40)
        self.burst = burst
        credit = burst * 1_000_000_000
        last = now
    }

    /// Whole units available at `now`.
    @inlinable public func available(now: UInt64) -> UInt64 { credit(at: now) / 1_000_000_000 }

    /// Takes `units` at `now` if the bucket holds them; false (nothing taken) otherwise.
    public mutating func take(_ units: UInt64, now: UInt64) -> Bool {
        refill(now: now)
        let need = units &* 1_000_000_000
        guard units <= burst, credit >= need else { return false }
        credit -= need
        return true
    }

    /// Nanoseconds from `now` until `units` are available (0: now). `units` above the burst
    /// never fit: `UInt64.max`.
    @inlinable public func wait(for units: UInt64, now: UInt64) -> UInt64 {
        guard units <= burst else { return .max }
        let need = units * 1_000_000_000
        let have = credit(at: now)
        if have >= need { return 0 }
        return (need - have + ratePerSecond - 1) / ratePerSecond
    }

    /// Adds the credit earned since the last refill (capped at the burst). Time never goes back.
    public mutating func refill(now: UInt64) {
        credit = credit(at: now)
        if now > last { last = now }
    }

    @inlinable func credit(at now: UInt64) -> UInt64 {
        let cap = burst * 1_000_000_000
        guard now > last, credit < cap else { return credit }
        let dt = now - last
        let room = cap - credit
        // dt × rate may overflow for long gaps: anything past filling the bucket is capped.
        if dt >= room / ratePerSecond + 1 { return cap }
        return min(cap, credit + dt * ratePerSecond)
    }
}
