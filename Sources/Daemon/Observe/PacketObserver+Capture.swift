// Capture settings, flushing and pruning: the observer's work off the per-packet path.
import Engine
import Core
import Capture
import Glibc
import LiveFeed
import Store

extension PacketObserver {
    /// Hands a capture settings change to the data path (any thread); applied at the next tick.
    /// Returns the request's number for `waitForCapture`.
    @discardableResult
    public func requestCapture(_ change: CaptureSettingsChange) -> UInt64 {
        let number = pendingSettings.withLock { pending in
            pending = change
            return settingsRequested.wrappingAdd(1, ordering: .relaxed).newValue
        }
        hasPendingSettings.store(true, ordering: .releasing)
        return number
    }

    /// Waits (any thread but the timer thread) until the timer thread has applied request
    /// `number` of `requestCapture` or a later one; false after `timeoutMilliseconds`.
    public func waitForCapture(_ number: UInt64, timeoutMilliseconds: Int) -> Bool {
        var waited = 0
        while settingsApplied.load(ordering: .acquiring) < number {
            guard waited < timeoutMilliseconds else { return false }
            usleep(2_000)
            waited += 2
        }
        return true
    }

    /// The timer thread's call, flow lock held: applies a pending settings change, refreshes the
    /// per-batch state (a flow-close record may follow), flushes the capture about once a second
    /// of wall time (so a quiet capture is on disk within a second), publishes queued events.
    public func tick() {
        if hasPendingSettings.load(ordering: .acquiring) {
            hasPendingSettings.store(false, ordering: .relaxed)
            let (change, number) = pendingSettings.withLock { ($0, settingsRequested.load(ordering: .relaxed)) }
            if let change { apply(change) }
            settingsApplied.store(number, ordering: .releasing)
        }
        beginBatch()
        let now = wallNanoseconds != 0 ? wallNanoseconds : UInt64(clamping: clock.wallNanoseconds())
        if now &- lastFlushNanoseconds >= 1_000_000_000 {
            lastFlushNanoseconds = now
            capture?.flush()
            flowIndex?.flush()
        }
    }

    func apply(_ change: CaptureSettingsChange) {
        guard let capture else { return }
        capture.setDetail(change.detail)
        capture.setEnabled(change.enabled)
        if !change.enabled {
            flowIndex?.close()
            activeSequence.store(-1, ordering: .releasing)
            firstLocations.withLock { $0.removeAll(keepingCapacity: true) }
            for i in 0..<noteCount where notes[i].captureOffset != 0 {
                notes[i].captureOffset = 0
                notes[i].captureSequence = 0
            }
        } else if capture.currentSequence == nil {
            // A new file starts with the next packet: flows already open record their first
            // packet in it.
            for i in 0..<noteCount where notes[i].captureOffset != 0 {
                notes[i].captureOffset = 0
                notes[i].captureSequence = 0
            }
        }
        capturing = capture.isEnabled
    }

    /// Flushes and closes the capture (daemon stop), flow lock held or engine stopped.
    public func close() {
        capture?.close()
        flowIndex?.close()
        ring?.close()
    }

    /// Deletes capture files (and their flow indexes) beyond the retention limits, never the
    /// file being written. Any thread. `request` is the store pruner's (cut-off in epoch ms).
    public func pruneCaptures(_ request: CapturePruneRequest) throws -> CapturePruneResult {
        guard let directory = capture?.directory else { return .none }
        return try CaptureFiles.prune(directory: directory, request, keeping: captureSequenceInUse)
    }

}
