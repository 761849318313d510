import Core
import Runtime
import Synchronization

/// The daemon's store writer (DESIGN.md §7, issue 5 Deliver 1): one dedicated thread owns a
/// `Store` connection and drains a bounded queue of `StoreRecord`s, one transaction per batch,
/// so the data path never waits on disk.
///
/// `submit` appends to a preallocated array under a mutex held only for the append (the
/// writer holds it just long enough to swap that array with its own empty one); it never waits
/// for disk and never allocates. When the queue holds `capacity` records the record is dropped
/// and `droppedCount` goes up. The writer wakes when `maxBatch` records are queued or every
/// `flushIntervalMs`, writes what it took in transactions of at most `maxBatch` records, and
/// coalesces flow updates within a transaction (only the newest update of a flow is written).
public final class StoreWriter: @unchecked Sendable {
    // Safe because: `pending`, `accepted`, `committed`, `stopping`, `finished`, `flushRequested`,
    // `statsValue` and `thread` are only touched with `lock` held; `store`, `batch` and `updates`
    // only by the writer thread once it started; `dropped` is atomic.

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

        /// Options (defaults suit the daemon).
        public init(capacity: Int = 65_536, maxBatch: Int = 4096, flushIntervalMs: Int = 100, busyTimeoutMs: Int = 5000) {
            self.capacity = max(1, capacity)
            self.maxBatch = max(1, maxBatch)
            self.flushIntervalMs = max(1, flushIntervalMs)
            self.busyTimeoutMs = busyTimeoutMs
        }
    }

    /// What the writer has done so far.
    public struct Stats: Sendable, Equatable {
        /// Transactions committed.
        public var batches: UInt64 = 0
        /// Records committed.
        public var recordsWritten: UInt64 = 0
        /// Transactions that failed (their records are lost, counted in `recordsLost`).
        public var failedBatches: UInt64 = 0
        /// Records in failed transactions.
        public var recordsLost: UInt64 = 0
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
    private let dropped = Atomic<UInt64>(0)

    /// Opens its own connection to the store at `path` (migrating it) and starts the thread.
    /// `onError` is called on the writer thread when a batch fails (log it). The thread runs
    /// until `close()`; call it on shutdown so the queue is written out.
    public init(path: String, options: Options = Options(), onError: (@Sendable (StoreError) -> Void)? = nil) throws {
        self.options = options
        self.onError = onError
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

    /// Records dropped because the queue was full (readable from any thread).
    public var droppedCount: UInt64 { dropped.load(ordering: .relaxed) }

    /// A snapshot of the writer's counters.
    public func stats() -> Stats {
        lock.withLock { statsValue }
    }

    /// Returns once every record accepted before the call is committed (or its batch failed).
    public func flush() {
        lock.withLock {
            let target = accepted
            flushRequested = true
            lock.broadcast()
            while committed < target && !finished { lock.wait() }
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
        while true {
            lock.lock()
            let deadline = StoreWriter.nanos() + UInt64(options.flushIntervalMs) * 1_000_000
            while !stopping && !flushRequested && pending.count < options.maxBatch {
                if !lock.wait(untilMonotonic: deadline) { break }
            }
            if pending.isEmpty {
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
            let through = accepted
            flushRequested = false
            lock.unlock()

            var start = 0
            while start < batch.count {
                let end = min(batch.count, start + options.maxBatch)
                write(start..<end)
                start = end
            }
            batch.removeAll(keepingCapacity: true)

            lock.withLock {
                committed = through
                lock.broadcast()
            }
        }
    }

    private func write(_ range: Range<Int>) {
        let t0 = StoreWriter.nanos()
        let cpu0 = SystemClock.threadCPUNanoseconds()
        var lockedAt = t0
        do {
            try store.connection.transaction {
                lockedAt = StoreWriter.nanos()
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
            }
        } catch {
            updates.removeAll(keepingCapacity: true)
            let e = error as? StoreError ?? .sqlite(path: store.connection.path, operation: "write batch", code: 0, message: "\(error)")
            lock.withLock {
                statsValue.failedBatches += 1
                statsValue.recordsLost += UInt64(range.count)
                statsValue.lastError = e.description
            }
            onError?(e)
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
