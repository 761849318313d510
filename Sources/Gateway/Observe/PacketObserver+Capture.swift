// Capture settings, flushing and pruning: the observer's work off the per-packet path.
import Core
import Capture
import LiveFeed
import Store

extension PacketObserver {
    /// Hands a capture settings change to the data path (any thread); applied at the next tick.
    public func requestCapture(_ change: CaptureSettingsChange) {
        pendingSettings.withLock { $0 = change }
        hasPendingSettings.store(true, ordering: .releasing)
    }

    /// The timer thread's call, flow lock held: applies a pending settings change, refreshes the
    /// per-batch state (a flow-close record may follow), flushes the capture about once a second
    /// of wall time (so a quiet capture is on disk within a second), publishes queued events.
    public func tick() {
        if hasPendingSettings.load(ordering: .acquiring) {
            hasPendingSettings.store(false, ordering: .relaxed)
            if let change = pendingSettings.withLock({ $0 }) { apply(change) }
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
    public func pruneCaptures(_ request: Store.CapturePruneRequest, nowMs: Int64) throws -> Store.CapturePruneResult {
        try pruneCaptures(olderThanMs: request.olderThan, maxTotalBytes: request.maxTotalBytes, dryRun: request.dryRun,
                          nowMs: nowMs)
    }

    /// Same as `pruneCaptures(_:nowMs:)` with the request's fields.
    public func pruneCaptures(olderThanMs: Int64?, maxTotalBytes: Int64?, dryRun: Bool = false,
                              nowMs: Int64) throws -> Store.CapturePruneResult {
        guard let directory = capture?.directory else { return Store.CapturePruneResult(files: 0, bytes: 0) }
        let maxAge = olderThanMs.map { UInt64(max(0, nowMs - $0)) * 1_000_000 }
        let maxBytes = maxTotalBytes.map { Int(clamping: $0) }
        if dryRun {
            // Same selection as CaptureFiles.prune, without deleting.
            let files = try CaptureFiles.list(directory: directory)
            var total = files.reduce(0) { $0 + $1.size }
            var count = 0
            var bytes: Int64 = 0
            let now = UInt64(max(0, nowMs)) * 1_000_000
            for f in files where f.sequence != captureSequenceInUse {
                let old = maxAge.map { now > f.modifiedNanoseconds && now - f.modifiedNanoseconds > $0 } ?? false
                let over = maxBytes.map { total > $0 } ?? false
                guard old || over else { continue }
                total -= f.size
                count += 1
                bytes += Int64(f.size)
            }
            return Store.CapturePruneResult(files: count, bytes: bytes)
        }
        let result = try CaptureFiles.prune(
            directory: directory, maxTotalBytes: maxBytes, maxAgeNanoseconds: maxAge,
            nowNanoseconds: UInt64(max(0, nowMs)) * 1_000_000, keeping: captureSequenceInUse)
        CaptureFlowIndex.removeOrphans(directory: directory)
        return Store.CapturePruneResult(files: result.files, bytes: Int64(result.bytes))
    }
}
