import Engine
import SystemIO
import Core
import Sessions
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
    /// `clock` is read for resume detection (boottime against monotonic).
    public init(intervalMs: Int64, log: Logger, clock: any TimeSource = SystemClock(),
                body: @escaping @Sendable (TickReason) -> Void) throws {
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
            var boot = clock.boottimeNanoseconds()
            var mono = clock.monotonicNanoseconds()
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
                    Sys.sleep(milliseconds: Int(interval))
                }
                let b = clock.boottimeNanoseconds(), m = clock.monotonicNanoseconds()
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
}
