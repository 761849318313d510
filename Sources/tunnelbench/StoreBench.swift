import Core
import Foundation
import Runtime
import Store
import Synchronization

/// `tunnelbench store [writer|prune|all] [--rows N]`: the store's write rate through
/// `StoreWriter` (bar: ≥ 100,000 flow records/s) and `prune` of ≥ 1,000,000 flow rows
/// while a writer inserts continuously (bar: writer's longest wait ≤ 100 ms).
enum StoreBench {
    static func run(_ args: [String]) throws {
        var which = "all"
        var rows = 1_000_000
        var i = 0
        while i < args.count {
            switch args[i] {
            case "writer", "prune", "all": which = args[i]
            case "--rows":
                i += 1
                guard i < args.count, let n = Int(args[i]), n > 0 else { throw BenchError("--rows needs a positive number") }
                rows = n
            default: throw BenchError("usage: tunnelbench store [writer|prune|all] [--rows N]")
            }
            i += 1
        }
        if which != "prune" { try writer(records: rows) }
        if which != "writer" { try prune(rows: rows) }
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static func tempDir() throws -> String {
        let dir = NSTemporaryDirectory() + "tunnelbench-store-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func seconds() -> Double { Double(SystemClock().monotonicNanoseconds()) / 1e9 }

    static func flow(_ id: Int64, at: Int64) -> FlowOpen {
        FlowOpen(id: id, proto: 6, src: IPAddress(v4: 0x0A63_0002), srcPort: UInt16(truncatingIfNeeded: id),
                 dst: IPAddress(v4: 0xC0A8_0105), dstPort: 443, peer: "alice", at: at, verdict: .allow)
    }

    /// Submits `record` until the queue takes it (the benchmark measures the writer, not drops).
    @inline(__always)
    static func submitWaiting(_ w: StoreWriter, _ record: StoreRecord, _ full: inout Int) {
        while !w.submit(record) {
            full += 1
            Sys.sleep(nanoseconds: 50_000)
        }
    }

    static func writer(records: Int) throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let w = try StoreWriter(path: dir + "/state.db")
        let now: Int64 = 1_800_000_000_000

        // 0. What submit costs: with the writer held off by another connection's write lock,
        //    count the process's heap allocations over 10,000 submits.
        do {
            let holder = try StateStore(path: dir + "/state.db")
            try holder.connection.execute("BEGIN IMMEDIATE")
            w.submit(.heartbeat(at: now))  // the writer takes this one and waits for the lock
            Sys.sleep(milliseconds: 50)
            let record = StoreRecord.flowOpened(flow(1, at: now))
            let a0 = allocationCount()
            for _ in 0..<10_000 { w.submit(record) }
            let allocs = allocationCount() - a0
            try holder.connection.execute("ROLLBACK")
            w.flush()
            print("store writer: \(allocs) heap allocations for 10000 submits (writer blocked, so only submit is counted)")
        }

        // 1. Flow opens only.
        var full = 0
        let t0 = seconds()
        for id in 2...Int64(records) + 1 { submitWaiting(w, .flowOpened(flow(id, at: now)), &full) }
        w.flush()
        let opens = seconds() - t0
        let fullBefore = w.droppedCount
        let cpu1 = Double(w.stats().cpuNs) / 1e9
        print(String(format: "store writer: %d flow-opened records in %.2f s = %.0f records/s wall (bar >= 100000/s), writer thread CPU %.2f s = %.0f records per CPU-second; full-queue retries %d",
                     records, opens, Double(records) / opens, cpu1, Double(records) / cpu1, full))

        // 2. Mixed life cycle: open, two updates, close per flow.
        let flows = records / 4
        full = 0
        let t1 = seconds()
        for k in 1...Int64(flows) {
            let id = Int64(records) + 1 + k
            submitWaiting(w, .flowOpened(flow(id, at: now)), &full)
            submitWaiting(w, .flowUpdated(FlowUpdate(id: id, lastSeen: now + 1, counters: FlowCounters(bytesOut: 100, packetsOut: 1))), &full)
            submitWaiting(w, .flowUpdated(FlowUpdate(id: id, lastSeen: now + 2, counters: FlowCounters(bytesOut: 200, packetsOut: 2))), &full)
            submitWaiting(w, .flowClosed(FlowClose(id: id, at: now + 3, counters: FlowCounters(bytesOut: 300, packetsOut: 3), reason: "fin")), &full)
        }
        w.flush()
        let mixed = seconds() - t1
        w.close()
        let s = w.stats()
        let cpu2 = Double(s.cpuNs) / 1e9 - cpu1
        print(String(format: "store writer: %d mixed records (open/update/update/close) in %.2f s = %.0f records/s wall, %.0f per writer CPU-second; batches %llu, failed %llu, full-queue retries %llu, longest batch %.1f ms",
                     flows * 4, mixed, Double(flows * 4) / mixed, Double(flows * 4) / cpu2, s.batches, s.failedBatches, w.droppedCount - fullBefore,
                     Double(s.longestBatchNs) / 1e6))
    }

    static func prune(rows: Int) throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.db"
        let day: Int64 = 86_400_000
        let now: Int64 = 1_800_000_000_000
        let seedStart = seconds()
        do {
            let store = try StateStore(path: path)
            var id: Int64 = 1
            while id <= Int64(rows) {
                let end = min(Int64(rows), id + 49_999)
                try store.connection.transaction {
                    for k in id...end { try store.insertFlow(flow(k, at: now - 30 * day + k)) }
                }
                id = end + 1
            }
            try store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        print(String(format: "store prune: seeded %d old flow rows in %.1f s (%d MB file)", rows, seconds() - seedStart, size >> 20))

        // The daemon's writer keeps inserting new flows (~20,000/s in bursts every 5 ms).
        let w = try StoreWriter(path: path, options: .init(flushIntervalMs: 20))
        let stop = Atomic<Bool>(false)
        let submitted = Atomic<Int>(0)
        let producer = WorkerThread(name: "bench-producer") {
            var id = Int64(rows) + 1_000_000
            while !stop.load(ordering: .relaxed) {
                for _ in 0..<100 {
                    w.submit(.flowOpened(flow(id, at: now)))
                    id += 1
                }
                submitted.add(100, ordering: .relaxed)
                Sys.sleep(milliseconds: 5)
            }
        }
        Sys.sleep(milliseconds: 200)
        let before = w.stats()

        let store = try StateStore(path: path)
        let retention = RetentionSettings(flowsMaxAgeMs: 7 * day, refusalsMaxAgeMs: nil, sessionsMaxAgeMs: nil, markersMaxAgeMs: nil,
                                          pcapMaxBytes: nil, pcapMaxAgeMs: nil)
        var lastShown = 0.0
        let t0 = seconds()
        var deleteDone = t0
        let report = try Pruner(store: store).run(retention: retention, now: now, progress: { p in
            let t = seconds()
            if p.removed == p.total { deleteDone = t }
            if t - lastShown > 2 {
                lastShown = t
                print("  … \(p.family.rawValue): \(p.removed)/\(p.total)")
            }
        })
        let elapsed = seconds() - t0
        Sys.sleep(milliseconds: 200)
        stop.store(true, ordering: .relaxed)
        producer.join()
        w.close()
        let s = w.stats()
        let removed = report.rows[.flows] ?? 0
        print(String(format: "store prune: removed %d flow rows in %.2f s (deletes %.2f s = %.0f rows/s; then incremental vacuum %.2f s), reclaimed %d MB",
                     removed, elapsed, deleteDone - t0, Double(removed) / (deleteDone - t0), elapsed - (deleteDone - t0),
                     Int(report.bytesReclaimed >> 20)))
        print(String(format: "store prune: concurrent writer: %d flows submitted, %llu written, %llu dropped, %llu failed batches; longest lock wait %.1f ms (bar <= 100 ms), longest batch %.1f ms (before prune: %.1f ms)",
                     submitted.load(ordering: .relaxed), s.recordsWritten, w.droppedCount, s.failedBatches,
                     Double(s.longestLockWaitNs) / 1e6, Double(s.longestBatchNs) / 1e6, Double(before.longestBatchNs) / 1e6))
    }
}
