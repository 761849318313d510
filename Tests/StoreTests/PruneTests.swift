import Core
import Foundation
import Synchronization
import Testing
@testable import Store

@Suite struct PruneTests {
    static let hour: Int64 = 3_600_000
    static let now: Int64 = 1_000 * hour

    /// One row of every family on each side of the cut-off and exactly at it.
    static func seeded() throws -> (TempDir, StateStore) {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        let cut = now - 10 * hour
        for (i, t) in [cut - 1, cut, cut + 1].enumerated() {
            try store.insertFlow(Fixtures.flow(Int64(i + 1), at: t))
            try store.recordRefusal(.session(peer: "p\(i)", windowEnd: Int64(i), at: t))
            try store.openSession(peer: "s\(i)", at: t - 5)
            try store.closeSession(SessionClose(peer: "s\(i)", at: t, reason: .idle))
            try store.addMarker(MarkerInput(at: t, label: "m\(i)", kind: .manual))
        }
        try store.openSession(peer: "open", at: cut - 50 * hour)  // open for ages: never pruned
        let oldAudit = try store.startAudit(label: "old", at: cut - 20 * hour)
        try store.addMarker(MarkerInput(at: cut - 19 * hour, label: "in old audit", kind: .manual))
        try store.stopAudit(at: cut - 18 * hour)
        _ = oldAudit
        try store.startAudit(label: "open audit", at: cut - 30 * hour)
        try store.addMarker(MarkerInput(at: cut - 29 * hour, label: "in open audit", kind: .manual))
        return (dir, store)
    }

    static let tenHours = RetentionSettings(flowsMaxAgeMs: 10 * hour, refusalsMaxAgeMs: 10 * hour, sessionsMaxAgeMs: 10 * hour,
                                            markersMaxAgeMs: 10 * hour, pcapMaxBytes: 1 << 20, pcapMaxAgeMs: 10 * hour)

    @Test func rowsStrictlyBeforeTheCutoffGoTheRestStay() throws {
        let (dir, store) = try PruneTests.seeded()
        defer { withExtendedLifetime(dir) {} }
        var progress: [PruneProgress] = []
        var asked: CapturePruneRequest?
        let report = try Pruner(store: store, options: .init(batchSize: 1, pauseMicros: 0)).run(
            retention: PruneTests.tenHours, now: PruneTests.now,
            capture: { req in asked = req; return CapturePruneResult(files: 2, bytes: 300) },
            progress: { progress.append($0) })
        let cut = PruneTests.now - 10 * PruneTests.hour
        #expect(report.rows == [.flows: 1, .refusals: 1, .sessions: 1, .markers: 2, .auditSessions: 1])
        #expect(report.cutoffs[.flows] == cut)
        #expect(report.capture == CapturePruneResult(files: 2, bytes: 300))
        #expect(asked == CapturePruneRequest(olderThan: cut, maxTotalBytes: 1 << 20, dryRun: false))
        #expect(try store.flows().map(\.firstSeen).sorted() == [cut, cut + 1])
        #expect(try store.refusals().map(\.lastAt).sorted() == [cut, cut + 1])
        #expect(try store.openSessions().map(\.peer) == ["open"])
        #expect(try store.sessions().compactMap(\.endedAt).sorted() == [cut, cut + 1])
        #expect(try store.markers().map(\.label) == ["in open audit", "m1", "m2"])
        #expect(try store.audits().map(\.label) == ["open audit"])
        #expect(progress.contains(PruneProgress(family: .markers, removed: 2, total: 2)))
    }

    @Test func markersHaveTheirOwnRetention() throws {
        let (dir, store) = try PruneTests.seeded()
        defer { withExtendedLifetime(dir) {} }
        var r = PruneTests.tenHours
        r.markersMaxAgeMs = nil  // keep the audit trail forever
        let report = try Pruner(store: store).run(retention: r, now: PruneTests.now)
        #expect(report.rows[.flows] == 1 && report.rows[.markers] == 0 && report.rows[.auditSessions] == 0)
        #expect(try store.markers().count == 5)
        #expect(try store.audits().count == 2)
    }

    @Test func dryRunCountsAndChangesNothing() throws {
        let (dir, store) = try PruneTests.seeded()
        defer { withExtendedLifetime(dir) {} }
        let before = try Fixtures.dump(store)
        var asked: CapturePruneRequest?
        let report = try Pruner(store: store).run(retention: PruneTests.tenHours, now: PruneTests.now, dryRun: true,
                                                  capture: { asked = $0; return CapturePruneResult(files: 0, bytes: 0) })
        #expect(report.dryRun && report.bytesReclaimed == 0)
        #expect(report.rows == [.flows: 1, .refusals: 1, .sessions: 1, .markers: 2, .auditSessions: 1])
        #expect(asked?.dryRun == true)
        #expect(try Fixtures.dump(store) == before)
        let real = try Pruner(store: store).run(retention: PruneTests.tenHours, now: PruneTests.now)
        #expect(real.rows == report.rows)
        #expect(try Fixtures.dump(store) != before)
    }

    @Test func noLimitsRemoveNothing() throws {
        let (dir, store) = try PruneTests.seeded()
        defer { withExtendedLifetime(dir) {} }
        let before = try Fixtures.dump(store)
        let forever = RetentionSettings(flowsMaxAgeMs: nil, refusalsMaxAgeMs: nil, sessionsMaxAgeMs: nil, markersMaxAgeMs: nil,
                                        pcapMaxBytes: nil, pcapMaxAgeMs: nil)
        let report = try Pruner(store: store).run(retention: forever, now: PruneTests.now)
        #expect(report.totalRows == 0 && report.cutoffs.isEmpty)
        #expect(try Fixtures.dump(store) == before)
    }

    @Test func pruningGivesSpaceBack() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        try Fixtures.insertFlows(store, firstId: 1, count: 20_000, at: 0)
        let report = try Pruner(store: store, options: .init(batchSize: 5000, pauseMicros: 0))
            .run(retention: PruneTests.tenHours, now: PruneTests.now)
        #expect(report.rows[.flows] == 20_000)
        #expect(report.bytesReclaimed > 1 << 20)
        #expect(try store.connection.scalarInt("PRAGMA freelist_count") == 0)
    }

    /// Prune 50k old flows while the daemon's writer inserts continuously: the prune finishes,
    /// the writer never fails, and every new flow survives. (1M rows: `tunnelbench store prune`.)
    @Test func pruneWhileTheWriterInserts() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let path = dir.db
        do {
            let seed = try StateStore(path: path)
            try Fixtures.insertFlows(seed, firstId: 1, count: 50_000, at: 0)
        }
        let w = try StoreWriter(path: path, options: .init(maxBatch: 1024, flushIntervalMs: 5))
        let producer = FlowProducer(writer: w, firstId: 1_000_000, at: PruneTests.now, burst: 50, pauseMicros: 1000)
        let store = try StateStore(path: path)
        let report = try Pruner(store: store).run(retention: PruneTests.tenHours, now: PruneTests.now)
        let submitted = producer.stop()
        w.close()
        let stats = w.stats()
        #expect(report.rows[.flows] == 50_000)
        #expect(stats.failedBatches == 0, "\(stats.lastError ?? "")")
        #expect(try Fixtures.count(store, "flows") == Int(stats.recordsWritten))
        #expect(stats.recordsWritten + w.droppedCount == UInt64(submitted))
        #expect(submitted > 0)
        print("prune 50k while writing: writer longest lock wait \(stats.longestLockWaitNs / 1000) µs, longest batch \(stats.longestBatchNs / 1000) µs, \(submitted) flows written")
    }
}
