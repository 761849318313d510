import Core
import Glibc

/// The two clocks the gateway reads, injectable so tests drive time (`TestSupport.ManualClock`).
///
/// - `monotonicNanoseconds`: for protocol timers (handshake retries, keepalives, key expiry).
///   The system clock uses `CLOCK_BOOTTIME`, which keeps counting during suspend, so keys expire
///   across a suspend as the WireGuard whitepaper §6 timers intend.
/// - `wallNanoseconds`: Unix epoch nanoseconds (UTC) — the WireGuard handshake's TAI64N timestamp
///   (whitepaper §5.4.2) — and `wallMilliseconds` derived from it for the free-session window and the
///   store (DESIGN.md §6–7). It can step; watch steps with ``ClockChangeWatcher``.
public protocol GatewayClock: Sendable {
    /// Nanoseconds on a clock that never goes backwards; only differences mean anything.
    func monotonicNanoseconds() -> UInt64
    /// Wall-clock time as Unix epoch nanoseconds.
    func wallNanoseconds() -> Int64
}

extension GatewayClock {
    /// Wall-clock time as Unix epoch milliseconds (the store's unit).
    public func wallMilliseconds() -> Int64 { wallNanoseconds() / 1_000_000 }
}

/// The real clocks: `CLOCK_BOOTTIME` and `CLOCK_REALTIME`.
public struct SystemClock: GatewayClock {
    public init() {}

    public func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public func wallNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
