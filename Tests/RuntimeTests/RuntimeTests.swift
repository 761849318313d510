import Core
import Glibc
import Runtime
import Synchronization
import Testing

/// Counts SIGUSR1 deliveries (the handler is a C function: no captures).
private let interruptions = Atomic<Int>(0)

/// What the reading thread of ``SysEINTRTests`` reports.
private final class Probe: Sendable {
    let thread = Atomic<UInt>(0)
    let attempts = Atomic<Int>(0)
    let result = Mutex<Int?>(nil)
}

@Suite(.serialized) struct SysEINTRTests {
    /// A real EINTR: a thread blocks in `read(2)` on an empty pipe, SIGUSR1 (handler installed
    /// without `SA_RESTART`) interrupts it, `Sys.call` retries, and the read completes once a byte
    /// arrives. More than one attempt proves the retry happened.
    @Test func retriesAReadInterruptedByASignal() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { sigaction(SIGUSR1, &previous, nil) }

        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { Sys.close(fds[0]); Sys.close(fds[1]) }
        let readEnd = fds[0]
        let probe = Probe()
        let reader = WorkerThread(name: "tv-eintr-test") {
            var unblock = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            probe.thread.store(UInt(pthread_self()), ordering: .releasing)
            var byte: UInt8 = 0
            let n = try? Sys.call("read(pipe)") { () -> Int in
                probe.attempts.add(1, ordering: .relaxed)
                return Glibc.read(readEnd, &byte, 1)
            }
            probe.result.withLock { $0 = n }
        }
        while probe.thread.load(ordering: .acquiring) == 0 { Sys.sleep(milliseconds: 1) }
        let target = pthread_t(probe.thread.load(ordering: .acquiring))
        let deadline = SystemClock().monotonicNanoseconds() + 10_000_000_000
        while probe.attempts.load(ordering: .relaxed) < 3 && SystemClock().monotonicNanoseconds() < deadline {
            pthread_kill(target, SIGUSR1)
            Sys.sleep(milliseconds: 5)
        }
        var one: UInt8 = 1
        #expect(write(fds[1], &one, 1) == 1)
        reader.join()
        #expect(probe.result.withLock { $0 } == 1)
        #expect(probe.attempts.load(ordering: .relaxed) >= 3)
        #expect(interruptions.load(ordering: .relaxed) >= 2)
    }
}

@Suite struct RuntimeTests {
    @Test func fileWrappersNameTheCallAndThePath() {
        #expect(throws: SystemError("open(/nonexistent/tunnelvision)", errno: ENOENT)) {
            _ = try Sys.open("/nonexistent/tunnelvision", O_RDONLY)
        }
        do {
            _ = try Sys.directoryEntries("/nonexistent/tunnelvision")
            Issue.record("did not throw")
        } catch {
            #expect(error.description == "opendir(/nonexistent/tunnelvision): No such file or directory (ENOENT)")
            #expect(error.errnoText == errnoText(ENOENT))
        }
        #expect(errnoText(EACCES) == "Permission denied")
        #expect(Sys.statIfPresent("/nonexistent/tunnelvision") == nil)
        #expect(throws: Never.self) { try Sys.unlinkIfPresent("/nonexistent-\(getpid())") }
    }

    @Test func conditionLockTimesOutOnTheMonotonicClock() {
        let lock = ConditionLock()
        let start = SystemClock().monotonicNanoseconds()
        let woken = lock.withLock { lock.wait(timeoutNanoseconds: 20_000_000) }
        #expect(!woken)
        #expect(SystemClock().monotonicNanoseconds() - start >= 20_000_000)
    }

    /// `stop()` cuts a `StopSignal` sleep short and joins the worker.
    @Test func workerThreadStopWakesItsStopSignal() {
        let stop = StopSignal()
        let rounds = Atomic<Int>(0)
        let start = SystemClock().monotonicNanoseconds()
        let worker = WorkerThread(name: "tv-stop-test", stopSignal: stop) {
            while stop.sleep(milliseconds: 60_000) { rounds.add(1, ordering: .relaxed) }
        }
        Sys.sleep(milliseconds: 10)
        worker.stop()
        worker.join()  // again: a no-op
        #expect(stop.isStopped)
        #expect(rounds.load(ordering: .relaxed) == 0)
        #expect(SystemClock().monotonicNanoseconds() - start < 30_000_000_000)
        #expect(!stop.sleep(milliseconds: 60_000))  // returns at once once stopped
    }

    @Test func loggerFiltersByLevelAndPrefixesThePriority() {
        let capture = LogCapture()
        var log = capture.logger
        log.minimum = .info
        log.debug("hidden")
        log.warning("shown")
        #expect(capture.all == ["<4>shown"])
    }
}
