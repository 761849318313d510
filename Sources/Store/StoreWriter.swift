import Core
import Runtime
import Synchronization

/// The daemon's store writer (docs/store.md): one dedicated thread owns a
/// `Store` connection and drains a bounded queue of `StoreRecord`s, one transaction per batch,
/// so the data path never waits on disk.
///
/// `submit` appends to a preallocated array under a mutex held only for the append (the
/// writer holds it just long enough to swap that array with its own empty one); it never waits
/// for disk and never allocates. When the queue holds `capacity` records the record is dropped
/// and `droppedCount` goes up. The writer wakes when `maxBatch` records are queued or every
/// `flushIntervalMs`, writes what it took in transactions of at most `maxBatch` records, and
/// coalesces flow updates within a transaction (only the newest update of a flow is written).
///
/// Nothing is lost silently. A batch that fails for a reason a retry can fix
/// (lock held past the busy timeout, disk full, read-only or vanished directory, I/O error:
/// `StoreError.isTransient`) is kept and retried with exponential backoff (`retryInitialMs`
/// doubling to `retryMaxMs`); meanwhile the queue keeps filling up to `capacity` and then drops,
/// so memory stays bounded by two queues' worth of records. A batch that fails for a reason
/// no retry fixes (a constraint, a damaged file) is written again one record per transaction and
/// only the records that still fail are dropped. Every record lost for good is counted in its
/// family (`drops()`, `health()`, `droppedCount`). An outage is reported once: `onError` and the
/// log at its first failure, and when a write succeeds again one automatic marker in the same
/// transaction ("store unavailable 19:02:11 UTC–19:02:36 UTC, 736 flow records dropped") and one
/// log line.
public final class StoreWriter: @unchecked Sendable {
    // Safe because: `pending`, `accepted`, `committed`, `stopping`, `finished`, `flushRequested`,
    // `statsValue`, `dropsValue`, `outage`, `retainedCount` and `thread` are only touched with
    // `lock` held; `store`, `batch`, `updates`, `backoffMs`, `unreportedPermanent` and
    // `lastPermanentReportNs` only by the writer thread once it started; `dropped` is atomic.

    /// Tuning.
    public struct Options: Sendable {
        /// Records the queue holds before dropping (default 65536).
        public var capacity: Int
        /// Records per transaction at most; also the queue length that wakes the writer early.
        public var maxBatch: Int
        /// Longest time a record waits in the queue before the writer takes it.
        public var flushIntervalMs: Int
        /// The writer connection's busy timeout.
        public var busyTimeoutMs: Int
        /// First wait before retrying a batch that failed transiently; doubles per failure.
        public var retryInitialMs: Int
        /// Longest wait between retries.
        public var retryMaxMs: Int

        /// Options (defaults suit the daemon).
        public init(capacity: Int = 65_536, maxBatch: Int = 4096, flushIntervalMs: Int = 100, busyTimeoutMs: Int = 5000,
                    retryInitialMs: Int = 100, retryMaxMs: Int = 5000) {
            self.capacity = max(1, capacity)
            self.maxBatch = max(1, maxBatch)
            self.flushIntervalMs = max(1, flushIntervalMs)
            self.busyTimeoutMs = busyTimeoutMs
            self.retryInitialMs = max(1, retryInitialMs)
            self.retryMaxMs = max(self.retryInitialMs, retryMaxMs)
        }
    }

    /// What the writer has done so far.
    public struct Stats: Sendable, Equatable {
        /// Transactions committed.
        public var batches: UInt64 = 0
        /// Records committed.
        public var recordsWritten: UInt64 = 0
        /// Transactions that failed (retried or, for records no retry fixes, dropped).
        public var failedBatches: UInt64 = 0
        /// Records the writer dropped for good after a failure (queue-full drops not included).
        public var recordsLost: UInt64 = 0
        /// Outages (a transient failure after success) so far.
        public var outages: UInt64 = 0
        /// Longest wait for the write lock (`BEGIN IMMEDIATE`), in nanoseconds.
        public var longestLockWaitNs: UInt64 = 0
        /// Longest transaction including that wait, in nanoseconds.
        public var longestBatchNs: UInt64 = 0
        /// CPU time the writer thread spent in transactions, in nanoseconds (records per CPU
        /// second stays meaningful on a loaded machine, where wall-clock rates do not).
        public var cpuNs: UInt64 = 0
        /// The last error, if any batch failed.
        public var lastError: String?
    }

    /// Options in force.
    public let options: Options
    private let store: StateStore
    private let onError: (@Sendable (StoreError) -> Void)?
    private let log: Logger?
    private let wallClock: @Sendable () -> Int64
    /// Guards the queue and counters. Its one condition wakes the writer (work, flush, stop) and
    /// the callers of `flush`/`close` (a batch committed), so it is always broadcast.
    private let lock = ConditionLock()
    private var thread: WorkerThread?
    private var pending: [StoreRecord]
    private var batch: [StoreRecord]
    private var updates: [Int64: FlowUpdate] = [:]
    private var accepted: UInt64 = 0
    private var committed: UInt64 = 0
    private var stopping = false
    private var finished = false
    private var flushRequested = false
    private var statsValue = Stats()
    private var dropsValue = StoreDrops()
    private let dropped = Atomic<UInt64>(0)
    /// The outage in progress: since when, the drops before it, its first error.
    private var outage: (startMs: Int64, dropsBefore: StoreDrops, error: String)?
    private var retainedCount = 0
    private var backoffMs = 0
    private var unreportedPermanent = 0
    private var lastPermanentReportNs: UInt64 = 0

    /// Opens its own connection to the store at `path` (migrating it) and starts the thread.
    /// `onError` is called on the writer thread at the first failure of an outage and for a
    /// record dropped because no retry could write it (log it); `log`, when given, also gets
    /// the outage's start and end. `wallClock` gives epoch ms for outage markers. The thread
    /// runs until `close()`; call it on shutdown so the queue is written out.
    public init(path: String, options: Options = Options(), log: Logger? = nil,
                onError: (@Sendable (StoreError) -> Void)? = nil,
                wallClock: @escaping @Sendable () -> Int64 = { SystemClock().wallMilliseconds() }) throws {
        self.options = options
        self.onError = onError
        self.log = log
        self.wallClock = wallClock
        store = try StateStore(path: path, mode: .readWrite, busyTimeoutMs: options.busyTimeoutMs)
        // A larger page cache for the writer: the flows indexes stay in memory between batches.
        try store.connection.execute("PRAGMA cache_size=-16384")
        pending = []
        pending.reserveCapacity(options.capacity)
        batch = []
        batch.reserveCapacity(options.capacity)
        updates.reserveCapacity(options.maxBatch)
        let thread = WorkerThread(name: "tv-store-writer") { [self] in run() }
        lock.withLock { self.thread = thread }
    }

    /// Queues `record`; false (and `droppedCount` + 1) when the queue is full or closed.
    /// Never waits for disk, never allocates.
    @discardableResult
    public func submit(_ record: StoreRecord) -> Bool {
        lock.lock()
        guard !stopping, pending.count < options.capacity else {
            dropsValue[record.family] &+= 1
            lock.unlock()
            dropped.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        pending.append(record)
        accepted &+= 1
        let wakeNow = pending.count == options.maxBatch
        lock.unlock()
        if wakeNow { lock.broadcast() }
        return true
    }

    /// Records lost for good, all families together: queue full, or dropped after a failure
    /// (readable from any thread).
    public var droppedCount: UInt64 { dropped.load(ordering: .relaxed) }

    /// Records lost for good, per family.
    public func drops() -> StoreDrops {
        lock.withLock { dropsValue }
    }

    /// Drops, the outage in progress (if any) and what waits for the store: what the daemon
    /// puts in `StatusReply.store`.
    public func health() -> StoreHealth {
        lock.withLock {
            StoreHealth(drops: dropsValue, unavailableSinceMs: outage?.startMs, retained: outage == nil ? 0 : retainedCount,
                        error: outage?.error)
        }
    }

    /// Records waiting in the queue now (not yet taken by the writer thread).
    public var queueDepth: Int { lock.withLock { pending.count } }

    /// A snapshot of the writer's counters.
    public func stats() -> Stats {
        lock.withLock { statsValue }
    }

    /// Returns once every record accepted before the call is committed, or the store is
    /// unavailable (the records are then retried, not waited for).
    public func flush() {
        lock.withLock {
            let target = accepted
            flushRequested = true
            lock.broadcast()
            while committed < target && !finished && outage == nil { lock.wait() }
        }
    }

    /// Writes everything queued, then stops and joins the thread. Later submits are dropped.
    /// Idempotent.
    public func close() {
        let writer: WorkerThread? = lock.withLock {
            stopping = true
            lock.broadcast()
            while !finished { lock.wait() }
            defer { thread = nil }
            return thread
        }
        writer?.join()
    }

    // MARK: - Writer thread

    private func run() {
        var through: UInt64 = 0
        while true {
            lock.lock()
            if batch.isEmpty {
                // In an outage with nothing kept (only its marker to write) wait for the backoff too.
                let waitMs = outage == nil ? options.flushIntervalMs : max(options.flushIntervalMs, backoffMs)
                let deadline = StoreWriter.nanos() + UInt64(waitMs) * 1_000_000
                while !stopping && !flushRequested && pending.count < options.maxBatch {
                    if !lock.wait(untilMonotonic: deadline) { break }
                }
                if pending.isEmpty && outage == nil {
                    flushRequested = false
                    committed = accepted
                    lock.broadcast()
                    if stopping {
                        finished = true
                        lock.unlock()
                        return
                    }
                    lock.unlock()
                    continue
                }
                swap(&pending, &batch)
                through = accepted
                flushRequested = false
            } else {
                // Records kept from a failed attempt: wait out the backoff (close cuts it short).
                let retryAt = StoreWriter.nanos() + UInt64(backoffMs) * 1_000_000
                while !stopping {
                    if !lock.wait(untilMonotonic: retryAt) { break }
                }
            }
            retainedCount = batch.count
            let finalAttempt = stopping
            lock.unlock()

            if writeBatch() {
                backoffMs = 0
                lock.withLock {
                    committed = through
                    retainedCount = 0
                    lock.broadcast()
                }
                continue
            }
            // A transient failure: what is left of the batch stays in `batch`.
            backoffMs = backoffMs == 0 ? options.retryInitialMs : min(options.retryMaxMs, backoffMs * 2)
            guard finalAttempt else {
                lock.withLock { retainedCount = batch.count }
                continue
            }
            // Closing while the store is unavailable: what could not be written is dropped.
            lock.withLock {
                let rest = batch.count + pending.count
                for r in batch { dropsValue[r.family] &+= 1 }
                for r in pending { dropsValue[r.family] &+= 1 }
                statsValue.recordsLost += UInt64(rest)
                dropped.wrappingAdd(UInt64(rest), ordering: .relaxed)
                pending.removeAll(keepingCapacity: true)
                committed = accepted
                finished = true
                lock.broadcast()
                log?.error("store: \(rest) records could not be written before shutdown (store unavailable since \(TimeText.iso(outage?.startMs ?? 0))): \(dropsValue.sentence) in all")
            }
            batch.removeAll(keepingCapacity: true)
            return
        }
    }

    /// Writes `batch` in transactions of at most `maxBatch` records. True when all of it is
    /// written or dropped for good; false after a transient failure, with the unwritten records
    /// left in `batch` (the written ones removed).
    private func writeBatch() -> Bool {
        var start = 0
        while start < batch.count {
            let end = min(batch.count, start + options.maxBatch)
            switch commit(start..<end) {
            case nil:
                start = end
            case let e? where e.isTransient:
                batch.removeSubrange(0..<start)
                return false
            case _?:
                // Some record cannot be written: write them one by one, drop only what fails.
                for i in start..<end {
                    switch commit(i..<(i + 1)) {
                    case nil: continue
                    case let e? where e.isTransient:
                        batch.removeSubrange(0..<i)
                        return false
                    case let e?:
                        lock.withLock {
                            dropsValue[batch[i].family] &+= 1
                            statsValue.recordsLost += 1
                        }
                        dropped.wrappingAdd(1, ordering: .relaxed)
                        reportPermanent(e)
                    }
                }
                start = end
            }
        }
        batch.removeAll(keepingCapacity: true)
        // An outage whose marker did not ride on a batch (every record of it dropped): end it alone.
        if lock.withLock({ outage != nil }), let e = commit(0..<0), e.isTransient { return false }
        return true
    }

    /// Reports a record dropped for an error no retry fixes: the first at once (`onError` and
    /// the log), later ones at most once a minute with their count, so a missing table cannot
    /// flood the log with a line per record.
    private func reportPermanent(_ e: StoreError) {
        unreportedPermanent += 1
        let now = StoreWriter.nanos()
        guard lastPermanentReportNs == 0 || now - lastPermanentReportNs >= 60_000_000_000 else { return }
        let count = unreportedPermanent
        unreportedPermanent = 0
        lastPermanentReportNs = now
        log?.error("store: \(count) record\(count == 1 ? "" : "s") dropped: \(e) (retrying cannot fix this; next report in a minute at the earliest)")
        onError?(e)
    }

    /// Writes `batch[range]` in one transaction — with the outage marker first when an outage
    /// is in progress, so the marker and the first records after it commit together. nil on
    /// success; the error otherwise (rolled back; an outage begins at a transient one).
    private func commit(_ range: Range<Int>) -> StoreError? {
        let t0 = StoreWriter.nanos()
        let cpu0 = SystemClock.threadCPUNanoseconds()
        var lockedAt = t0
        let now = wallClock()
        var dropsAtStart = StoreDrops()
        let ending: (marker: MarkerInput, sentence: String, total: UInt64)? = lock.withLock {
            dropsAtStart = dropsValue
            guard let o = outage else { return nil }
            let lost = dropsValue.since(o.dropsBefore)
            let zone = TimeText.displayZone
            let sentence = "store unavailable \(TimeText.clock(o.startMs, zone: zone))–\(TimeText.clock(now, zone: zone)), \(lost.sentence)"
            let counts = RecordFamily.allCases.map { "\($0.rawValue)=\(lost[$0])" }.joined(separator: " ")
            let detail = "from=\(TimeText.iso(o.startMs)) until=\(TimeText.iso(now)) \(counts) error=\(o.error)"
            return (MarkerInput(at: o.startMs, label: sentence, kind: .automatic, detail: detail), sentence, lost.total)
        }
        do {
            try store.connection.transaction {
                lockedAt = StoreWriter.nanos()
                if let ending { try store.addMarker(ending.marker) }
                for i in range { try apply(batch[i]) }
                for (_, u) in updates { try store.updateFlow(u) }
            }
            updates.removeAll(keepingCapacity: true)
            let t1 = StoreWriter.nanos()
            let cpu = SystemClock.threadCPUNanoseconds() - cpu0
            lock.withLock {
                statsValue.batches += 1
                statsValue.recordsWritten += UInt64(range.count)
                statsValue.longestLockWaitNs = max(statsValue.longestLockWaitNs, lockedAt - t0)
                statsValue.longestBatchNs = max(statsValue.longestBatchNs, t1 - t0)
                statsValue.cpuNs += cpu
                if ending != nil { outage = nil }
                if ending != nil { lock.broadcast() }
            }
            if let ending {
                log?.warning("store: writable again; \(ending.sentence)")
                log?.event(.storeRecovered(path: store.connection.path, dropped: ending.total))
            }
            return nil
        } catch {
            updates.removeAll(keepingCapacity: true)
            let e = error as? StoreError ?? .sqlite(path: store.connection.path, operation: "write batch", code: 0, message: "\(error)")
            let began: Bool = lock.withLock {
                statsValue.failedBatches += 1
                statsValue.lastError = e.description
                guard e.isTransient, outage == nil else { return false }
                // The outage began with this attempt: drops while it waited on the lock belong to it.
                outage = (startMs: now, dropsBefore: dropsAtStart, error: e.description)
                statsValue.outages += 1
                lock.broadcast()  // flush() stops waiting: the records are kept, not lost
                return true
            }
            if began {
                log?.error("store: writes failing (\(e)); keeping up to \(options.capacity) queued records and retrying with backoff up to \(options.retryMaxMs) ms; one line when it is writable again")
                log?.event(.storeOutage(path: store.connection.path, error: e.description))
                onError?(e)
            }
            return e
        }
    }

    private func apply(_ record: StoreRecord) throws {
        switch record {
        case let .flowOpened(f): try store.insertFlow(f)
        case var .flowUpdated(u):
            if u.capture == nil { u.capture = updates[u.id]?.capture }  // a coalesced update keeps its location
            updates[u.id] = u
        case var .flowClosed(c):
            if let dropped = updates.removeValue(forKey: c.id), c.capture == nil { c.capture = dropped.capture }
            try store.closeFlow(c)
        case let .refusal(r): try store.recordRefusal(r)
        case let .sessionOpened(peer, at): try store.openSession(peer: peer, at: at)
        case let .sessionClosed(c): try store.closeSession(c)
        case let .windowPut(w): try store.putWindow(w)
        case let .windowDeleted(peer): try store.deleteWindow(peer: peer)
        case let .marker(m): try store.addMarker(m)
        case let .heartbeat(at): try store.heartbeat(at: at, droppedRecords: Int64(truncatingIfNeeded: droppedCount))
        }
    }

    /// Monotonic nanoseconds (batch timings and the flush deadline).
    static func nanos() -> UInt64 { SystemClock().monotonicNanoseconds() }
}
