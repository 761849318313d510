import Core
import Glibc
import Runtime
import Synchronization

/// Runs the watchdog's pass on its own thread: every `intervalMs`, at once when the wall clock is
/// set (``ClockChangeWatcher``), and on the first wake after a suspend (resume). A monotonic
/// one-shot timer for the whole window would stretch over suspend (§6.4); the pass itself always
/// compares the wall clock with the stored dates.
public final class WatchdogTicker: Sendable {
    private let shutdown: EventNotifier
    private let thread: Mutex<WorkerThread?>

    /// Starts the thread; `body` runs once at once (reason `.interval`) and then on every tick.
    public init(intervalMs: Int64, log: Logger, body: @escaping @Sendable (TickReason) -> Void) throws {
        let shutdown = try EventNotifier()
        let watcher: ClockChangeWatcher?
        do {
            watcher = try ClockChangeWatcher()
        } catch {
            log.warning("watchdog: cannot watch for clock changes (\(error)); ticking every \(intervalMs) ms only")
            watcher = nil
        }
        self.shutdown = shutdown
        let interval = Int32(clamping: max(1, intervalMs))
        thread = Mutex(WorkerThread(name: "tv-watchdog") {
            var boot = WatchdogTicker.now(CLOCK_BOOTTIME)
            var mono = WatchdogTicker.now(CLOCK_MONOTONIC)
            body(.interval)
            while true {
                var reason = TickReason.interval
                do {
                    let r: WaitResult
                    if let watcher {
                        r = try watcher.wait(timeoutMilliseconds: interval, shutdown: shutdown)
                    } else {
                        r = try Readiness.wait((-1, nil), shutdown, timeoutMilliseconds: interval)
                    }
                    if r == .closed { return }
                    if r == .readable { reason = .clockChanged }
                } catch {
                    log.error("watchdog: \(error)")
                    usleep(UInt32(interval) * 1000)
                }
                let b = WatchdogTicker.now(CLOCK_BOOTTIME), m = WatchdogTicker.now(CLOCK_MONOTONIC)
                if reason == .interval && TickReason.isResume(bootDeltaNs: b &- boot, monotonicDeltaNs: m &- mono) {
                    reason = .resume
                }
                boot = b
                mono = m
                body(reason)
            }
        })
    }

    /// Stops the thread and waits for it.
    public func stop() {
        shutdown.signal()
        thread.withLock { t in
            t?.join()
            t = nil
        }
    }

    static func now(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
