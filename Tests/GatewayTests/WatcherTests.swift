import Core
import Sessions
import Glibc
import Runtime
import Synchronization
import Testing
import TestSupport

@testable import Gateway

@Suite struct WatcherTests {
    /// The signal self-pipe turns a signal into a readable byte. SIGUSR2 so nothing else in the test
    /// process is disturbed; sent to the process (not `raise`d: the test runs on a worker thread that
    /// blocks signals), so whichever thread accepts it runs the handler — the daemon's situation.
    @Test func signalArrivesThroughThePipe() throws {
        let watcher = try SignalWatcher(signals: [SIGUSR2])
        let never = try EventNotifier()
        #expect(try watcher.next() == nil)
        kill(getpid(), SIGUSR2)
        #expect(try watcher.wait(timeoutMilliseconds: 5000, shutdown: never) == SIGUSR2)
        kill(getpid(), SIGUSR2)
        #expect(try watcher.wait(timeoutMilliseconds: 5000, shutdown: never) == SIGUSR2)
        #expect(try watcher.next() == nil)
        #expect(try watcher.wait(timeoutMilliseconds: 0, shutdown: never) == nil)
    }

    /// Without a clock step the watcher stays quiet. A step cannot be made in a test without setting
    /// the host's clock (time namespaces do not cover CLOCK_REALTIME), so the ECANCELED path is not
    /// exercised here (see docs/sysio.md).
    @Test func clockWatcherIsQuietWithoutAStep() throws {
        let watcher = try ClockChangeWatcher()
        let shutdown = try EventNotifier()
        #expect(try watcher.consumeChange() == false)
        #expect(try watcher.wait(timeoutMilliseconds: 20, shutdown: shutdown) == .timedOut)
        shutdown.signal()
        #expect(try watcher.wait(timeoutMilliseconds: -1, shutdown: shutdown) == .closed)
    }

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
