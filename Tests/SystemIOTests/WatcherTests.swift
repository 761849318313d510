import Core
import Glibc
import Runtime
import Testing

@testable import SystemIO

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
}
