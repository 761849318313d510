import Runtime
#if canImport(Glibc)
import Core
import Glibc
#endif

/// Deletes what retention says (docs/store.md), in bounded batches:
/// each batch is `DELETE … WHERE rowid IN (SELECT rowid … LIMIT n)` in its own short
/// `BEGIN IMMEDIATE` transaction (n adapts so a transaction takes about
/// `targetTransactionMicros`), with a pause between batches so the daemon's writer gets
/// the lock. A row is due when its time is strictly before `now - maxAge`:
///
/// - flows by `last_seen`; refusals by `last_at`;
/// - sessions by `ended_at` — open sessions are never touched;
/// - markers by `at`, except markers of the open audit session;
/// - audit sessions by `ended_at` (markers' age) once none of their markers is kept — never the open one.
///
/// Afterwards free pages are given back with `PRAGMA incremental_vacuum` in steps (the store
/// is created with `auto_vacuum=INCREMENTAL`). pcap files are the capture module's: pass a
/// `capture` closure and it gets the cut-off and byte limit.
public final class Pruner {
    /// Tuning.
    public struct Options: Sendable {
        /// Rows in the first delete transaction of a family; later batches adapt (halved when
        /// a transaction took longer than `targetTransactionMicros`, doubled up to
        /// `maxBatchSize` when it took less than a quarter of it).
        public var batchSize: Int
        /// Upper bound of the adaptive batch size.
        public var maxBatchSize: Int
        /// How long one transaction should hold the write lock, in microseconds.
        public var targetTransactionMicros: UInt32
        /// Shortest pause between transactions, in microseconds. The pause is at least half the
        /// previous transaction's duration too, so a waiting writer always gets a turn.
        public var pauseMicros: UInt32
        /// Pages per incremental-vacuum transaction.
        public var vacuumPagesPerStep: Int

        /// Options (defaults keep each transaction to about 10 ms).
        public init(batchSize: Int = 1000, maxBatchSize: Int = 20_000, targetTransactionMicros: UInt32 = 10_000,
                    pauseMicros: UInt32 = 2000, vacuumPagesPerStep: Int = 256) {
            self.batchSize = max(1, batchSize)
            self.maxBatchSize = max(self.batchSize, maxBatchSize)
            self.targetTransactionMicros = max(1, targetTransactionMicros)
            self.pauseMicros = pauseMicros
            self.vacuumPagesPerStep = max(1, vacuumPagesPerStep)
        }
    }

    private let store: StateStore
    /// Options in force.
    public let options: Options

    /// A pruner working through `store`'s connection.
    public init(store: StateStore, options: Options = Options()) {
        self.store = store
        self.options = options
    }

    /// The table and due-condition (`?1` = cut-off) of each family.
    static func target(_ f: PruneFamily) -> (table: String, condition: String) {
        switch f {
        case .flows: return ("flows", "last_seen < ?1")
        case .refusals: return ("refusals", "last_at < ?1")
        case .sessions: return ("sessions", "ended_at IS NOT NULL AND ended_at < ?1")
        case .markers:
            return ("markers", "at < ?1 AND (audit_session_id IS NULL OR audit_session_id NOT IN (SELECT id FROM audit_sessions WHERE ended_at IS NULL))")
        case .auditSessions:
            return ("audit_sessions", "ended_at IS NOT NULL AND ended_at < ?1 AND NOT EXISTS (SELECT 1 FROM markers m WHERE m.audit_session_id = audit_sessions.id AND m.at >= ?1)")
        }
    }

    /// Prunes (or with `dryRun` counts) everything `retention` says is due at `now`.
    /// `progress` is called after each batch; `capture` is asked to prune pcap files.
    public func run(retention: RetentionSettings, now: Int64, dryRun: Bool = false,
                    capture: ((CapturePruneRequest) throws -> CapturePruneResult)? = nil,
                    progress: ((PruneProgress) -> Void)? = nil) throws -> PruneReport {
        let c = store.connection
        var report = PruneReport(dryRun: dryRun, rows: [:], cutoffs: [:], bytesReclaimed: 0, capture: nil)
        let pagesBefore = try c.scalarInt("PRAGMA page_count") ?? 0
        for family in PruneFamily.allCases {
            report.rows[family] = 0
            guard let age = retention.maxAge(for: family) else { continue }
            let (cutoff, overflow) = now.subtractingReportingOverflow(age)
            if overflow { continue }
            report.cutoffs[family] = cutoff
            let (table, condition) = Pruner.target(family)
            let total = Int(try c.scalarInt("SELECT count(*) FROM \(table) WHERE \(condition)", [cutoff]) ?? 0)
            if dryRun || total == 0 {
                report.rows[family] = total
                progress?(PruneProgress(family: family, removed: total, total: total))
                continue
            }
            let delete = "DELETE FROM \(table) WHERE rowid IN (SELECT rowid FROM \(table) WHERE \(condition) LIMIT ?2)"
            var removed = 0
            var batch = options.batchSize
            while true {
                let t0 = Pruner.micros()
                let n: Int = try c.transaction {
                    let s = try c.prepared(delete)
                    s.bind(1, cutoff)
                    s.bind(2, Int64(batch))
                    try s.run()
                    return c.changes
                }
                let took = Pruner.micros() - t0
                removed += n
                progress?(PruneProgress(family: family, removed: removed, total: max(total, removed)))
                if n < batch { break }
                if took > UInt64(options.targetTransactionMicros) {
                    batch = max(1, batch / 2)
                } else if took < UInt64(options.targetTransactionMicros / 4) {
                    batch = min(options.maxBatchSize, batch * 2)
                }
                pause(after: took)
            }
            report.rows[family] = removed
        }
        if !dryRun && report.totalRows > 0 {
            try reclaim()
            let pageSize = try c.scalarInt("PRAGMA page_size") ?? 4096
            let pagesAfter = try c.scalarInt("PRAGMA page_count") ?? pagesBefore
            report.bytesReclaimed = max(0, pagesBefore - pagesAfter) * pageSize
        }
        if let capture {
            report.capture = try capture(CapturePruneRequest(
                olderThan: retention.pcapMaxAgeMs.flatMap { now.subtractingReportingOverflow($0).overflow ? nil : now - $0 },
                maxTotalBytes: retention.pcapMaxBytes, dryRun: dryRun))
        }
        return report
    }

    /// Sleeps `pauseMicros`, or half the last transaction's duration if that is longer (at
    /// most a second), so writers waiting on the busy handler get the lock in between.
    private func pause(after tookMicros: UInt64) {
        let p = max(UInt64(options.pauseMicros), min(tookMicros / 2, 1_000_000))
        if p > 0 { Sys.sleep(nanoseconds: p * 1000) }
    }

    static func micros() -> UInt64 {
        SystemClock().monotonicNanoseconds() / 1000
    }

    /// Gives free pages back to the file system in steps of `vacuumPagesPerStep` pages, each in
    /// its own short transaction; then a passive WAL checkpoint (never waits for readers).
    func reclaim() throws {
        let c = store.connection
        guard try c.scalarInt("PRAGMA auto_vacuum") == 2 else { return }
        var last = Int64.max
        while true {
            let free = try c.scalarInt("PRAGMA freelist_count") ?? 0
            if free == 0 || free >= last { break }
            last = free
            let t0 = Pruner.micros()
            try c.transaction { try c.execute("PRAGMA incremental_vacuum(\(options.vacuumPagesPerStep))") }
            pause(after: Pruner.micros() - t0)
        }
        try c.execute("PRAGMA wal_checkpoint(PASSIVE)")
    }
}
