// Applies the store's capture settings to a running daemon without a restart, and keeps the
// capture directory under the retention limits. Runs on its own thread, never the data path.
import Core
import Capture
import Glibc
import Runtime
import Store

/// Polls the settings row (`StateDirectory/state.db`) every `interval` and hands capture changes
/// to the `PacketObserver`; every `pruneInterval` prunes capture files under the retention
/// settings (`pcap-bytes`, `pcap-age`).
public final class CaptureSettingsPoller: @unchecked Sendable {
    // Safe: the thread handle is touched only by init/stop on the owning thread; the rest is
    // immutable or thread-safe.
    let storePath: String
    let observer: PacketObserver
    let intervalMilliseconds: Int
    let pruneIntervalMilliseconds: Int
    let log: Logger
    let stopping = StopSignal()
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

    func loop() {
        var applied: CaptureSettingsChange? = nil
        var lastError = ""
        var sincePrune = pruneIntervalMilliseconds - 5000  // first prune shortly after start
        while !stopping.isStopped {
            var retention: RetentionSettings? = nil
            do {
                let store = try StateStore(path: storePath, mode: .readOnly, busyTimeoutMs: 200)
                let decoded = try store.settings()
                let s = decoded.settings
                retention = s.retention
                let change = CaptureSettingsChange(
                    enabled: s.capture.enabled, detail: s.capture.detail)
                if change != applied {
                    observer.requestCapture(change)
                    if applied != nil || change.enabled {
                        log.info("capture: \(change.enabled ? "on, detail \(change.detail.rawValue)" : "off")")
                    }
                    applied = change
                }
                lastError = ""
            } catch {
                let text = "\(error)"
                if text != lastError { log.debug("capture settings: \(text)") }
                lastError = text
            }
            if sincePrune >= pruneIntervalMilliseconds {
                sincePrune = 0
                let r = retention ?? .factory
                let nowMs = observer.clock.wallMilliseconds()
                do {
                    let result = try observer.pruneCaptures(
                        olderThanMs: r.pcapMaxAgeMs.map { nowMs - $0 }, maxTotalBytes: r.pcapMaxBytes, nowMs: nowMs)
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
