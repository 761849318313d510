import Core
import Foundation
import Runtime
import Synchronization
import Testing
@testable import Store

#if canImport(Glibc)
import Glibc
#endif

/// Issue 13 item 1: a store that cannot be written (lock held, disk full) loses nothing silently.
/// Each test counts exactly the rows that reached the store against the records submitted.
@Suite(.serialized) struct WriterOutageTests {
    /// Options that make an outage quick to reach and to leave.
    static let quick = StoreWriter.Options(capacity: 40, maxBatch: 40, flushIntervalMs: 2, busyTimeoutMs: 10,
                                           retryInitialMs: 5, retryMaxMs: 40)

    func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    /// Submits flows `ids` with a short pause every 10, returns how many were accepted.
    func submitFlows(_ w: StoreWriter, _ ids: ClosedRange<Int64>) -> Int {
        var accepted = 0
        for id in ids {
            if w.submit(.flowOpened(Fixtures.flow(id, at: 1000 + id))) { accepted += 1 }
            if id % 10 == 0 { usleep(2_000) }
        }
        return accepted
    }

    /// A second connection holds an exclusive lock: the writer keeps the batch it took, retries
    /// with backoff, logs once; the queue fills and drops are counted per family; once the lock
    /// goes, everything kept is written with one marker saying how long and how many.
    @Test func aHeldLockIsRetriedCountedAndMarkedOnce() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let errors = Mutex<[StoreError]>([])
        let logged = Mutex<[String]>([])
        let logger = Logger(minimum: .debug) { _, m in logged.withLock { $0.append(m) } }
        let w = try StoreWriter(path: dir.db, options: Self.quick, log: logger, onError: { e in errors.withLock { $0.append(e) } })
        w.submit(.flowOpened(Fixtures.flow(1, at: 1)))
        w.flush()

        let holder = try Connection(path: dir.db)
        try holder.execute("BEGIN EXCLUSIVE")
        let accepted = submitFlows(w, 2...301)
        w.submit(.refusal(.session(peer: "bob", windowEnd: 5, at: 1000)))  // the queue is full by now: dropped
        #expect(eventually { w.health().unavailableSinceMs != nil })
        let during = w.health()
        #expect(during.retained > 0 && during.retained <= 40)
        #expect(during.error?.contains("locked") == true)
        // Several retries at the 40 ms backoff cap (waited for, not slept: a loaded machine may
        // need longer than 150 ms for three).
        #expect(eventually { w.stats().failedBatches >= 3 })
        #expect(errors.withLock { $0.count } == 1)  // once per outage, not per retry
        try holder.execute("COMMIT")

        #expect(eventually { w.health().unavailableSinceMs == nil })
        w.flush()
        w.close()
        let drops = w.drops()
        #expect(accepted < 300 && accepted >= 40)
        #expect(drops.flows == UInt64(300 - accepted))
        #expect(drops.refusals == 1)
        #expect(drops.total == w.droppedCount)
        let store = try StateStore(path: dir.db, mode: .readOnly)
        #expect(try Fixtures.count(store, "flows") == 1 + accepted)  // every accepted record reached the store
        #expect(try Fixtures.count(store, "refusals") == 0)
        let markers = try store.markers()
        try #require(markers.count == 1)
        let m = markers[0]
        #expect(m.kind == .automatic)
        #expect(m.label.hasPrefix("store unavailable "))
        #expect(m.label.hasSuffix(", \(300 - accepted) flow records, 1 refusal dropped"), "\(m.label)")
        #expect(m.detail?.contains("flows=\(300 - accepted) refusals=1 sessions=0") == true, "\(m.detail ?? "")")
        #expect(w.stats().outages == 1)
        let all = logged.withLock { $0 }
        let lines = all.filter { !$0.contains("TUNNELVISION_EVENT=") }
        let events = all.filter { $0.contains("TUNNELVISION_EVENT=") }
        #expect(lines.count == 2, "\(lines)")  // the outage's start and its end
        #expect(events.count == 2, "\(events)")  // one store-outage event, one store-recovered
        #expect(events.first?.contains("TUNNELVISION_EVENT=store-outage REASON=") == true)
        #expect(events.last?.contains("TUNNELVISION_EVENT=store-recovered REASON=recovered") == true)
        #expect(lines.first?.hasPrefix("store: writes failing") == true)
        #expect(lines.last?.hasPrefix("store: writable again; store unavailable ") == true)
    }

    /// Closing while the store is still locked: the final attempt fails and what was kept and
    /// queued is dropped and counted, not silently discarded.
    @Test func closingDuringAnOutageCountsWhatIsLeft() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let w = try StoreWriter(path: dir.db, options: Self.quick)
        w.submit(.flowOpened(Fixtures.flow(1, at: 1)))
        w.flush()
        let holder = try Connection(path: dir.db)
        try holder.execute("BEGIN EXCLUSIVE")
        for id in Int64(2)...21 { w.submit(.flowOpened(Fixtures.flow(id, at: id))) }
        w.submit(.sessionOpened(peer: "alice", at: 5))
        #expect(eventually { w.health().unavailableSinceMs != nil })
        w.close()
        try holder.execute("COMMIT")
        #expect(w.drops().flows == 20)
        #expect(w.drops().sessions == 1)
        #expect(w.droppedCount == 21)
        let store = try StateStore(path: dir.db, mode: .readOnly)
        #expect(try Fixtures.count(store, "flows") == 1)
    }

    /// A record no retry can write (its table is gone) is dropped alone: the rest of its batch
    /// is written, one record per transaction.
    @Test func aBadRecordIsDroppedAloneAndCounted() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let errors = Mutex(0)
        let w = try StoreWriter(path: dir.db, options: .init(flushIntervalMs: 5), onError: { _ in errors.withLock { $0 += 1 } })
        w.flush()
        let other = try StateStore(path: dir.db)
        try other.connection.execute("DROP TABLE refusals")
        w.submit(.flowOpened(Fixtures.flow(1, at: 1)))
        for i in 0..<50 { w.submit(.refusal(.session(peer: "bob\(i)", windowEnd: 5, at: 1000))) }
        w.submit(.flowOpened(Fixtures.flow(2, at: 2)))
        w.flush()
        for i in 0..<50 { w.submit(.refusal(.session(peer: "carol\(i)", windowEnd: 5, at: 1000))) }
        w.close()
        #expect(w.drops().refusals == 100)
        #expect(w.drops().total == 100)
        #expect(errors.withLock { $0 } == 1)  // reported once (then at most once a minute), not per record
        #expect(try Fixtures.count(other, "flows") == 2)
        #expect(w.health().unavailableSinceMs == nil)  // not an outage
    }

    /// As root: a real full disk (a 1 MiB tmpfs filled by another file). Writes fail with
    /// SQLITE_FULL, are kept and retried; freeing the space lets them through.
    @Test(.enabled(if: geteuid() == 0, "needs root to mount a tmpfs"))
    func aFullDiskIsRetriedAndCounted() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let mnt = dir.path + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        guard shell("mount -t tmpfs -o size=1m tmpfs '\(mnt)'") == 0 else { Issue.record("mount failed"); return }
        defer { _ = shell("umount -l '\(mnt)'") }
        let db = mnt + "/state.db"
        let w = try StoreWriter(path: db, options: Self.quick)
        w.submit(.flowOpened(Fixtures.flow(1, at: 1)))
        w.flush()
        // Fill what is left of the file system.
        _ = shell("dd if=/dev/zero of='\(mnt)/filler' bs=4k 2>/dev/null")
        var accepted = 0
        var id: Int64 = 2
        while w.health().unavailableSinceMs == nil && id < 100_000 {
            accepted += submitFlows(w, id...(id + 99))
            id += 100
        }
        try #require(w.health().unavailableSinceMs != nil, "the disk never filled")
        let submitted = Int(id - 2)
        accepted += submitFlows(w, id...(id + 199))
        let total = submitted + 200
        #expect(w.health().error?.contains("full") == true, "\(w.health().error ?? "")")
        unlink(mnt + "/filler")
        #expect(eventually { w.health().unavailableSinceMs == nil })
        w.close()
        #expect(w.drops().flows == UInt64(total - accepted))
        let store = try StateStore(path: db, mode: .readOnly)
        #expect(try Fixtures.count(store, "flows") == 1 + accepted)
        #expect(try store.markers().count == 1)
        print("full disk: \(total) flow records submitted, \(accepted) reached the store (kept through the outage), \(total - accepted) dropped and counted")
    }

    func shell(_ command: String) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        guard (try? p.run()) != nil else { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}
