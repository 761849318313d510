import Core
import Glibc

/// The clocks tunneld reads, injectable so tests drive time (`TestSupport.ManualClock`). Every
/// `clock_gettime` of the project is in ``SystemClock``.
///
/// - `monotonicNanoseconds`: `CLOCK_MONOTONIC`, for deadlines, pacing and timing; it stops during
///   suspend (``ConditionLock`` waits on it).
/// - `boottimeNanoseconds`: for protocol timers (handshake retries, keepalives, key expiry).
///   The system clock uses `CLOCK_BOOTTIME`, which keeps counting during suspend, so keys expire
///   across a suspend as the WireGuard whitepaper §6 timers intend (boottime running ahead of
///   monotonic is how the watchdog sees a resume).
/// - `wallNanoseconds`: Unix epoch nanoseconds (UTC) — the WireGuard handshake's TAI64N timestamp
///   (whitepaper §5.4.2) — and `wallMilliseconds` derived from it for the free-session window and the
///   store (docs/session.md, docs/store.md). It can step; watch steps with `ClockChangeWatcher`.
public protocol TimeSource: Sendable {
    /// Nanoseconds on a clock that never goes backwards and stops during suspend.
    func monotonicNanoseconds() -> UInt64
    /// Nanoseconds on a clock that never goes backwards and counts suspend; only differences mean anything.
    func boottimeNanoseconds() -> UInt64
    /// Wall-clock time as Unix epoch nanoseconds.
    func wallNanoseconds() -> Int64
}

extension TimeSource {
    /// Wall-clock time as Unix epoch milliseconds (the store's unit).
    public func wallMilliseconds() -> Int64 { wallNanoseconds() / 1_000_000 }
}

/// The real clocks: `CLOCK_MONOTONIC`, `CLOCK_BOOTTIME` and `CLOCK_REALTIME`.
public struct SystemClock: TimeSource {
    public init() {}

    public func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public func boottimeNanoseconds() -> UInt64 {
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

extension SystemClock {
    /// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), for benchmarks and stats.
    public static func threadCPUNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// CPU time of the process (`CLOCK_PROCESS_CPUTIME_ID`), for benchmarks.
    public static func processCPUNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
