import Core
import Foundation
import Synchronization
import Testing
@testable import Store

@Suite struct WriterTests {
    @Test func everyRecordKindIsWrittenAndUpdatesCoalesce() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let w = try StoreWriter(path: dir.db, options: .init(flushIntervalMs: 10))
        w.submit(.flowOpened(Fixtures.flow(1, at: 1000)))
        for i in 1...5 {
            w.submit(.flowUpdated(FlowUpdate(id: 1, lastSeen: 1000 + Int64(i), counters: FlowCounters(bytesOut: UInt64(i)))))
        }
        w.submit(.flowOpened(Fixtures.flow(2, at: 1100)))
        w.submit(.flowUpdated(FlowUpdate(id: 2, lastSeen: 1200, counters: FlowCounters(bytesOut: 9))))
        w.submit(.flowClosed(FlowClose(id: 2, at: 1300, counters: FlowCounters(bytesOut: 10, packetsOut: 2), reason: "fin")))
        w.submit(.sessionOpened(peer: "alice", at: 900))
        w.submit(.windowPut(SessionWindow(peer: "alice", allowedUntil: 900_900, reconnectAt: 3_600_900)))
        w.submit(.refusal(.session(peer: "bob", windowEnd: 5, at: 1000)))
        w.submit(.refusal(.session(peer: "bob", windowEnd: 5, at: 1005)))
        w.submit(.marker(MarkerInput(at: 1000, label: "tunneld started", kind: .automatic)))
        w.submit(.heartbeat(at: 1400))
        w.flush()
        w.submit(.sessionClosed(SessionClose(peer: "alice", at: 2000, reason: .shutdown)))
        w.submit(.windowDeleted(peer: "alice"))
        w.close()
        #expect(!w.submit(.heartbeat(at: 1)))  // closed: dropped
        #expect(w.droppedCount == 1)
        #expect(w.stats().failedBatches == 0)

        let store = try StateStore(path: dir.db, mode: .readOnly)
        let f1 = try #require(try store.flow(id: 1))
        #expect(f1.lastSeen == 1005 && f1.counters.bytesOut == 5)
        let f2 = try #require(try store.flow(id: 2))
        #expect(f2.closedAt == 1300 && f2.counters == FlowCounters(bytesOut: 10, packetsOut: 2))  // the close wins over the update
        #expect(try store.sessions().first?.endReason == .shutdown)
        #expect(try store.window(peer: "alice") == nil)
        #expect(try store.refusals().first?.count == 2)
        #expect(try store.markers().map(\.label) == ["tunneld started"])
        #expect(try store.daemonState()?.heartbeatAt == 1400)
    }

    /// A batch that fails for good (its table is gone) is written again record by record: only
    /// the record that cannot be written is dropped, counted and reported; the writer keeps going.
    @Test func aFailingBatchIsCountedReportedAndSurvived() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let errors = Mutex<[StoreError]>([])
        let w = try StoreWriter(path: dir.db, options: .init(flushIntervalMs: 5), onError: { e in errors.withLock { $0.append(e) } })
        w.submit(.flowOpened(Fixtures.flow(1, at: 1)))
        w.flush()
        let other = try StateStore(path: dir.db)
        try other.connection.execute("DROP TABLE flows")
        w.submit(.flowOpened(Fixtures.flow(2, at: 2)))
        w.submit(.heartbeat(at: 5))
        w.flush()
        w.submit(.heartbeat(at: 7))
        w.close()
        let stats = w.stats()
        #expect(stats.failedBatches == 2 && stats.recordsLost == 1)  // the batch, then flow 2 alone
        #expect(w.drops().flows == 1 && w.drops().total == 1)
        #expect(stats.lastError?.contains("flows") == true)
        #expect(errors.withLock { $0.count } == 1)
        #expect(try other.daemonState()?.heartbeatAt == 7)
    }

    @Test func aFullQueueDropsAndCounts() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        // A second connection holds the write lock, so the writer cannot drain the queue.
        let holder = try StateStore(path: dir.db)
        let w = try StoreWriter(path: dir.db, options: .init(capacity: 8, maxBatch: 8, flushIntervalMs: 1))
        var accepted = 0
        try holder.connection.transaction {
            usleep(20_000)  // let the writer take the (empty) queue once and block
            for i in 0..<100 where w.submit(.heartbeat(at: Int64(i))) { accepted += 1 }
        }
        w.close()
        #expect(accepted >= 8 && accepted < 100)
        #expect(w.droppedCount == UInt64(100 - accepted))
        // The queued heartbeats were written after every drop: they carry the count into the store.
        #expect(try holder.daemonState()?.droppedRecords == Int64(100 - accepted))
        #expect(w.stats().recordsWritten + w.stats().recordsLost == UInt64(accepted))
    }

    /// The daemon's writer and tunnelctl's marker/audit writes at once: no `database is locked`.
    @Test func writerAndCLIMarkersTogetherNeverFailLocked() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let path = dir.db
        let w = try StoreWriter(path: path, options: .init(maxBatch: 2048, flushIntervalMs: 5))
        let producer = FlowProducer(writer: w, firstId: 1, at: 1, burst: 100, pauseMicros: 1000)
        usleep(20_000)
        var failures: [String] = []
        let cli = try StateStore(path: path)
        for i in 0..<150 {
            do {
                if i % 50 == 0 { try cli.startAudit(label: "audit \(i)", at: Int64(i)) }
                try cli.addMarker(MarkerInput(at: Int64(i), label: "mark \(i)", kind: .manual))
                if i % 50 == 49 { try cli.stopAudit(at: Int64(i)) }
                // A fresh connection each time, like separate tunnelctl runs.
                if i % 10 == 0 { try StateStore(path: path).addMarker(MarkerInput(at: Int64(i), label: "fresh \(i)", kind: .manual)) }
            } catch { failures.append("\(error)") }
        }
        let submitted = producer.stop()
        w.close()
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let stats = w.stats()
        #expect(stats.failedBatches == 0, "\(stats.lastError ?? "")")
        #expect(stats.recordsWritten + w.droppedCount == UInt64(submitted))
        #expect(try Fixtures.count(cli, "markers") == 165)
        #expect(try Fixtures.count(cli, "flows") == Int(stats.recordsWritten))
        #expect(try cli.audits().count == 3)
        #expect(submitted > 0)
        print("writer+cli: \(submitted) flows, longest writer lock wait \(stats.longestLockWaitNs / 1000) µs")
    }
}
