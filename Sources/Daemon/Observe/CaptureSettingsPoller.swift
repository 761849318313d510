// Applies the store's capture settings to a running daemon without a restart, and keeps the
// capture directory under the retention limits. Runs on its own thread, never the data path.
import Engine
import Core
import Synchronization
import Capture
import Glibc
import Runtime
import Store

/// Polls the settings row (`StateDirectory/state.db`) every `interval` and hands capture changes
/// to the `PacketObserver`; every `pruneInterval` prunes capture files under the retention
/// settings (`pcap-bytes`, `pcap-age`). `tunnelctl capture on|off` does not wait for it: it asks
/// the daemon (control request `capture`, `apply(_:)`), which applies the row's new value at once;
/// the poll is the fallback for changes made otherwise (`tunnelctl retention set capture=on`, an
/// older tunnelctl, a store edited by hand). One read-only connection is kept between polls.
public final class CaptureSettingsPoller: @unchecked Sendable {
    // Safe: the thread handle is touched only by init/stop on the owning thread; `applied` is
    // behind a Mutex; the rest is immutable or atomic.
    let storePath: String
    let observer: PacketObserver
    let intervalMilliseconds: Int
    let pruneIntervalMilliseconds: Int
    let log: Logger
    let stopping = StopSignal()
    /// The settings last handed to the observer (by a poll or by `apply`).
    let applied = Mutex<CaptureSettingsChange?>(nil)
    private var thread: WorkerThread?

    /// Starts polling `storePath` (missing store: capture stays as configured until it appears).
    public init(storePath: String, observer: PacketObserver, intervalMilliseconds: Int = 2000,
                pruneIntervalMilliseconds: Int = 60_000, log: Logger)
    {
        self.storePath = storePath
        self.observer = observer
        self.intervalMilliseconds = intervalMilliseconds
        self.pruneIntervalMilliseconds = pruneIntervalMilliseconds
        self.log = log
        thread = WorkerThread(name: "tv-capture", stopSignal: stopping) { [self] in loop() }
    }

    /// Stops the thread and waits for it.
    public func stop() {
        thread?.stop()
        thread = nil
    }

    /// Applies `change` now (the control request `capture`, sent by `tunnelctl capture on|off`
    /// after it wrote the row) and waits until the data path runs with it; false when that did
    /// not happen within `timeoutMilliseconds`. The next poll then finds the row already applied.
    public func apply(_ change: CaptureSettingsChange, timeoutMilliseconds: Int = 2000) -> Bool {
        let number = applied.withLock { applied -> UInt64 in
            if change != applied {
                log.info("capture: \(change.enabled ? "on, detail \(change.detail.rawValue)" : "off")")
            }
            applied = change
            return observer.requestCapture(change)
        }
        return observer.waitForCapture(number, timeoutMilliseconds: timeoutMilliseconds)
    }

    func loop() {
        var store: StateStore? = nil  // kept open between polls; reopened after an error
        var lastError = ""
        var sincePrune = pruneIntervalMilliseconds - 5000  // first prune shortly after start
        while !stopping.isStopped {
            var retention: RetentionSettings? = nil
            do {
                if store == nil { store = try StateStore(path: storePath, mode: .readOnly, busyTimeoutMs: 200) }
                // Read under the lock: a row read before an `apply` must not undo it.
                try applied.withLock { applied in
                    let s = try store!.settings().settings
                    retention = s.retention
                    let change = CaptureSettingsChange(
                        enabled: s.capture.enabled, detail: s.capture.detail)
                    guard change != applied else { return }
                    observer.requestCapture(change)
                    if applied != nil || change.enabled {
                        log.info("capture: \(change.enabled ? "on, detail \(change.detail.rawValue)" : "off")")
                    }
                    applied = change
                }
                lastError = ""
            } catch {
                store = nil
                let text = "\(error)"
                if text != lastError { log.debug("capture settings: \(text)") }
                lastError = text
            }
            if sincePrune >= pruneIntervalMilliseconds {
                sincePrune = 0
                let r = retention ?? .factory
                let nowMs = observer.clock.wallMilliseconds()
                do {
                    let result = try observer.pruneCaptures(CapturePruneRequest(
                        olderThan: r.pcapMaxAgeMs.map { nowMs - $0 }, maxTotalBytes: r.pcapMaxBytes, dryRun: false))
                    if result.files > 0 { log.info("capture: pruned \(result.files) file(s), \(result.bytes) bytes") }
                } catch {
                    log.warning("capture prune: \(error)")
                }
            }
            guard stopping.sleep(milliseconds: intervalMilliseconds) else { return }
            sincePrune += intervalMilliseconds
        }
    }
}
