import Engine
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Policy
import Runtime
import Store
import WireGuard

/// The daemon's automatic markers (docs/store.md): start and stop, policy
/// reloads (generation and a BLAKE2s hash of the rule files), sessions ended by the watchdog,
/// and store-queue drops (one marker per occurrence window, not per dropped record).
///
/// Callers (the control thread, the watchdog, the signal loop) only append to a small queue;
/// one thread of its own writes the rows through its own `Store` connection. Markers are rare,
/// so they do not share the `StoreWriter`'s queue — a marker about queue drops must not be
/// dropped by the very queue that is full — and never wait on disk in a caller's thread. The
/// same thread polls the writer's drop counter every `dropCheckIntervalMs`.
public final class DaemonMarkers: @unchecked Sendable {
    // Safe: `pending`, `stopping` and `drops` are guarded by `condition`; `store` is used only
    // by the worker thread (and by `stop` after that thread has been joined).

    /// Coalesces store-queue drops into windows (pure: counts and times in, markers out).
    /// A window opens at the first check that sees the drop counter grow and closes at the
    /// first check that sees no growth, or once it has lasted `maxWindowMs`; its marker is
    /// placed at the window's start and says how many records were lost in it.
    public struct DropWindow: Sendable, Equatable {
        /// Longest window; a longer drop storm gives one marker per `maxWindowMs`.
        public var maxWindowMs: Int64
        /// Drops already accounted for (reported, or before the first check).
        public private(set) var reported: UInt64
        /// Start of the open window, if any.
        public private(set) var openStart: Int64?
        private var openTotal: UInt64 = 0

        /// A window tracker starting from `baseline` drops (those before the daemon watched).
        public init(baseline: UInt64 = 0, maxWindowMs: Int64 = 60_000) {
            reported = baseline
            self.maxWindowMs = maxWindowMs
        }

        /// One check of the drop counter `total` at `now`; returns a marker when a window closed.
        public mutating func observe(total: UInt64, now: Int64) -> MarkerInput? {
            if let start = openStart {
                let grew = total > openTotal
                openTotal = max(openTotal, total)
                if !grew || now - start >= maxWindowMs {
                    let m = marker(start: start, end: now, lost: openTotal - reported, total: openTotal)
                    reported = openTotal
                    openStart = nil
                    return m
                }
                return nil
            }
            if total > reported {
                openStart = now
                openTotal = total
            }
            return nil
        }

        /// Closes an open window (daemon stopping); nil when none is open.
        public mutating func close(now: Int64) -> MarkerInput? {
            guard let start = openStart else { return nil }
            let m = marker(start: start, end: now, lost: openTotal - reported, total: openTotal)
            reported = openTotal
            openStart = nil
            return m
        }

        private func marker(start: Int64, end: Int64, lost: UInt64, total: UInt64) -> MarkerInput {
            MarkerInput(at: start, label: "store queue full: records dropped", kind: .automatic,
                        detail: "dropped=\(lost) within=\(DurationFormat.format(ms: max(1, end - start))) total=\(total)")
        }

        public static func == (a: DropWindow, b: DropWindow) -> Bool {
            a.maxWindowMs == b.maxWindowMs && a.reported == b.reported && a.openStart == b.openStart && a.openTotal == b.openTotal
        }
    }

    private let store: StateStore
    private let log: Logger
    private let now: @Sendable () -> Int64
    private let droppedCount: (@Sendable () -> UInt64)?
    private let dropCheckIntervalMs: Int
    private let condition = ConditionLock()
    private var pending: [MarkerInput] = []
    private var stopping = false
    private var written = 0
    private var enqueued = 0
    private var handled = 0
    private var drops: DropWindow
    private var thread: WorkerThread?

    /// Markers written so far (tests).
    public var writtenCount: Int { condition.lock(); defer { condition.unlock() }; return written }

    /// Opens its own connection to the store at `storePath`. `droppedCount` reads the
    /// `StoreWriter`'s queue-full counter (nil: no drop markers).
    public init(storePath: String, log: Logger, now: @escaping @Sendable () -> Int64,
                droppedCount: (@Sendable () -> UInt64)? = nil, dropCheckIntervalMs: Int = 5000, dropWindowMs: Int64 = 60_000) throws {
        store = try StateStore(path: storePath, busyTimeoutMs: 10_000)
        self.log = log
        self.now = now
        self.droppedCount = droppedCount
        self.dropCheckIntervalMs = max(10, dropCheckIntervalMs)
        drops = DropWindow(baseline: droppedCount?() ?? 0, maxWindowMs: dropWindowMs)
    }

    /// Starts the writing thread.
    public func start() {
        guard thread == nil else { return }
        thread = WorkerThread(name: "tv-markers") { [self] in loop() }
    }

    /// Writes what is queued (and an open drop window), then stops the thread. Idempotent.
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        thread?.join()
        thread = nil
        // Whatever arrived after the thread's last pass (or without a thread at all).
        condition.lock()
        var rest = pending
        pending.removeAll()
        if let m = drops.close(now: now()) { rest.append(m) }
        condition.unlock()
        write(rest)
    }

    /// Waits until everything queued before the call is written (tests, shutdown).
    public func flush() {
        condition.lock()
        let target = enqueued
        // The worker broadcasts after every batch and stop() broadcasts too: no need to poll.
        while handled < target && thread != nil && !stopping { condition.wait() }
        condition.unlock()
    }

    // MARK: events (call from any thread; they never block on the store)

    /// Call after bring-up: the daemon is up with policy `generation` from `policyDirectory`.
    public func daemonStarted(version: String, pid: Int32, generation: UInt64, ruleCount: Int, policyDirectory: String) {
        enqueue(MarkerInput(at: now(), label: "tunneld started", kind: .automatic,
                            detail: "version=\(version) pid=\(pid) generation=\(generation) rules=\(ruleCount) files=\(DaemonMarkers.ruleHash(directory: policyDirectory))"))
    }

    /// Call when the daemon begins to shut down (`reason`: e.g. `signal 15`).
    public func daemonStopping(reason: String) {
        enqueue(MarkerInput(at: now(), label: "tunneld stopping", kind: .automatic, detail: reason))
    }

    /// Call after a successful policy reload.
    public func policyReloaded(generation: UInt64, ruleCount: Int, directory: String) {
        enqueue(MarkerInput(at: now(), label: "policy reloaded", kind: .automatic,
                            detail: "generation=\(generation) rules=\(ruleCount) files=\(DaemonMarkers.ruleHash(directory: directory))"))
    }

    /// A BLAKE2s-128 hex digest over the rule files as `name NUL text NUL`, sorted by name
    /// (what `PolicySource.loadDirectory` reads); `unreadable` when the directory cannot be read.
    /// Read again after the load, so an edit in between would show; the generation is exact.
    public static func ruleHash(directory: String) -> String {
        guard let sources = try? PolicySource.loadDirectory(directory) else { return "unreadable" }
        var bytes: [UInt8] = []
        for s in sources.sorted(by: { $0.name < $1.name }) {
            bytes += Array(s.name.utf8) + [0] + Array(s.text.utf8) + [0]
        }
        let digest = Blake2s.hash(bytes, outputLength: 16)
        return "blake2s:" + digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    // MARK: worker

    private func enqueue(_ m: MarkerInput) {
        condition.lock()
        pending.append(m)
        enqueued += 1
        condition.broadcast()  // the worker and flush() wait on the same condition
        condition.unlock()
    }

    private func loop() {
        let checkEvery = UInt64(dropCheckIntervalMs) * 1_000_000
        var nextCheck = SystemClock().monotonicNanoseconds() + checkEvery
        while true {
            condition.lock()
            while pending.isEmpty && !stopping && condition.wait(untilMonotonic: nextCheck) {}
            var batch = pending
            pending.removeAll()
            let done = stopping
            if SystemClock().monotonicNanoseconds() >= nextCheck, let droppedCount {
                if let m = drops.observe(total: droppedCount(), now: now()) { batch.append(m) }
                nextCheck = SystemClock().monotonicNanoseconds() + checkEvery
            }
            condition.unlock()
            write(batch)
            condition.lock()
            condition.broadcast()
            condition.unlock()
            if done { return }
        }
    }

    private func write(_ batch: [MarkerInput]) {
        for m in batch {
            var ok = false
            do {
                try store.addMarker(m)
                ok = true
            } catch {
                log.warning("store: marker '\(m.label)' not written: \(error)")
            }
            condition.lock()
            if ok { written += 1 }
            handled += 1
            condition.unlock()
        }
    }
}
