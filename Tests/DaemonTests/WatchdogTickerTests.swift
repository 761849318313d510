import Core
import Engine
import Runtime
import Sessions
import Synchronization
import Testing
import TestSupport

@testable import Daemon

@Suite struct WatchdogTickerTests {
    /// The ticker reads the clock it is given: a suspend on a `ManualClock` (boottime runs ahead
    /// of monotonic) makes exactly the next tick a `.resume`; the others stay `.interval`.
    @Test func watchdogTickerSeesAResumeOnTheInjectedClock() throws {
        let clock = ManualClock()
        let reasons = Mutex<[TickReason]>([])
        let ticker = try WatchdogTicker(intervalMs: 5, log: LogCapture().logger, clock: clock) { reason in
            reasons.withLock { $0.append(reason) }
        }
        defer { ticker.stop() }
        func waitUntil(_ done: ([TickReason]) -> Bool) {
            let deadline = SystemClock().monotonicNanoseconds() + 10_000_000_000
            while !reasons.withLock({ done($0) }) && SystemClock().monotonicNanoseconds() < deadline {
                Sys.sleep(milliseconds: 1)
            }
        }
        waitUntil { $0.count >= 3 }
        #expect(!reasons.withLock { $0.contains(.resume) })
        clock.suspend(for: .seconds(30))
        waitUntil { $0.contains(.resume) }
        let after = reasons.withLock { $0.count }
        waitUntil { $0.count >= after + 3 }
        ticker.stop()
        let seen = reasons.withLock { $0 }
        #expect(seen.first == .interval)
        #expect(seen.filter { $0 == .resume }.count == 1)
        #expect(seen.count >= after + 3)
    }
}
