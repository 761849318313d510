import Core
import Foundation
import Store
import Synchronization
import Testing

@testable import tunnelctl

/// `tunnelctl prune [--dry-run]`: cut-off boundaries per family, open sessions and the open
/// audit session kept, markers outliving flows, pcap files by age and total size, and a dry run
/// that changes nothing (checksum of every row).
@Suite struct PruneCommandTests {
    typealias F = HistoryFixture
    static let day = HistoryFixture.day
    static let now = HistoryFixture.now

    /// Rows on both sides of every cut-off (factory retention: flows 7d, refusals 30d,
    /// sessions 90d, markers/audit 365d).
    func boundaryStore() throws -> HistoryFixture {
        let f = try HistoryFixture()
        let s = try f.store()
        let now = Self.now, day = Self.day
        func flow(_ id: Int64, _ at: Int64) -> FlowOpen {
            FlowOpen(id: id, proto: 6, src: F.alice, srcPort: UInt16(40000 + id), dst: F.printer, dstPort: 443, peer: "alice", at: at, verdict: .allow)
        }
        try s.insertFlow(flow(1, now - 7 * day))  // exactly at the cut-off: kept
        try s.insertFlow(flow(2, now - 7 * day - 1))  // 1 ms older: pruned
        try s.insertFlow(flow(3, now - 60 * day))  // pruned
        try s.insertFlow(flow(4, now - 1000))  // kept
        try s.recordRefusal(.session(peer: "alice", windowEnd: 1, at: now - 30 * day))  // kept
        try s.recordRefusal(.session(peer: "alice", windowEnd: 2, at: now - 30 * day - 1))  // pruned
        // Sessions: an old one still open is kept; ended ones by their end.
        _ = try s.openSession(peer: "bob", at: now - 90 * day - 5)
        _ = try s.closeSession(SessionClose(peer: "bob", at: now - 90 * day - 1, reason: .idle))  // pruned
        _ = try s.openSession(peer: "bob", at: now - 91 * day)
        _ = try s.closeSession(SessionClose(peer: "bob", at: now - 90 * day, reason: .idle))  // kept (at the cut-off)
        _ = try s.openSession(peer: "carol", at: now - 400 * day)  // open: kept
        // Audit trail: a closed old audit session with one old marker (both pruned), a marker
        // older than flows' retention (kept: markers have their own), and an open audit
        // session older than the markers' retention whose marker is kept with it.
        try s.startAudit(label: "old audit", at: now - 500 * day)
        try s.addMarker(MarkerInput(at: now - 450 * day, label: "old mark", kind: .manual))
        try s.stopAudit(at: now - 400 * day)
        try s.addMarker(MarkerInput(at: now - 365 * day - 1, label: "loose old mark", kind: .automatic))  // pruned
        try s.addMarker(MarkerInput(at: now - 365 * day, label: "at the cut-off", kind: .automatic))  // kept
        try s.addMarker(MarkerInput(at: now - 10 * day, label: "ten days", kind: .manual))  // kept though flows go
        try s.startAudit(label: "long audit", at: now - 700 * day)
        try s.addMarker(MarkerInput(at: now - 600 * day, label: "in the open audit", kind: .manual))  // kept
        return f
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func rows(_ report: [String: Any]) -> [String: Int] {
        var out: [String: Int] = [:]
        for f in report["families"] as? [[String: Any]] ?? [] { out[f["family"] as! String] = f["rows"] as? Int }
        return out
    }

    @Test func boundariesAndDryRun() throws {
        let f = try boundaryStore()
        let before = try F.checksum(try f.store())
        let dry = f.run(["prune", "--dry-run", "--json"])
        #expect(dry.code == .ok, "\(dry.err)")
        #expect(try F.checksum(try f.store()) == before, "--dry-run changed the store")
        let dryReport = try json(dry.out)
        let expected = ["flows": 2, "refusals": 1, "sessions": 1, "markers": 2, "audit-sessions": 1]
        #expect(rows(dryReport) == expected)
        #expect(dryReport["dryRun"] as? Bool == true)
        let dryText = f.run(["prune", "--dry-run"])
        #expect(dryText.out.hasPrefix("dry run: would remove 7 rows and 0 pcap files; nothing was changed"))
        #expect(try F.checksum(try f.store()) == before)

        let real = f.run(["prune", "--json"])
        #expect(real.code == .ok, "\(real.err)")
        #expect(rows(try json(real.out)) == expected, "the dry run predicted the real run")
        let s = try StateStore(path: f.storePath, mode: .readOnly)
        #expect(try s.flows().map(\.id).sorted() == [1, 4])
        #expect(try s.refusals().map(\.window) == [1])
        let sessions = try s.sessions()
        #expect(sessions.count == 2 && sessions.contains { $0.peer == "carol" && $0.endedAt == nil })
        #expect(sessions.contains { $0.endedAt == Self.now - 90 * Self.day })
        #expect(Set(try s.markers().map(\.label)) == ["at the cut-off", "ten days", "in the open audit"])
        #expect(try s.audits().map(\.label) == ["long audit"])
        // Nothing left to do: a second run removes nothing.
        let again = f.run(["prune", "--json"])
        #expect(rows(try json(again.out)).values.allSatisfy { $0 == 0 })
    }

    @Test func markersHaveTheirOwnRetention() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        #expect(f.run(["retention", "set", "flows=1h", "sessions=1h", "refusals=1h"]).code == .ok)
        let r = f.run(["prune", "--json"])
        #expect(r.code == .ok)
        let s = try StateStore(path: f.storePath, mode: .readOnly)
        #expect(try s.flows().map(\.id).sorted() == [2, 3], "flows last seen over an hour ago are gone")
        #expect(try s.markers().count == 3, "markers stay: their retention is 365d")
        #expect(try s.audits().count == 2)
        #expect(try s.sessions().map(\.peer) == ["bob"], "alice's ended session went, bob's open one stays")
    }

    @Test func pcapFilesByAgeThenSize() throws {
        let f = try HistoryFixture()
        _ = try f.store()
        try FileManager.default.createDirectory(atPath: f.captureDir, withIntermediateDirectories: true)
        func file(_ seq: Int, ageMs: Int64) throws {
            let path = f.captureDir + "/" + String(format: "capture-%06d.pcap", seq)
            try Data(repeating: 0xAB, count: 1000).write(to: URL(fileURLWithPath: path))
            let t = Double(Self.now - ageMs) / 1000
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: t)], ofItemAtPath: path)
        }
        try file(1, ageMs: 8 * Self.day)  // older than pcap-age 7d
        try file(2, ageMs: 3_600_000)
        try file(3, ageMs: 60_000)
        try file(4, ageMs: 1000)  // newest: never deleted (may be the file being written)
        try Data("not a capture".utf8).write(to: URL(fileURLWithPath: f.captureDir + "/notes.txt"))
        #expect(f.run(["retention", "set", "pcap-bytes=2500B"]).code == .ok)
        let dry = try json(f.run(["prune", "--dry-run", "--json"]).out)
        let dp = try #require(dry["pcap"] as? [String: Any])
        #expect(dp["files"] as? Int == 2 && dp["bytes"] as? Int == 2000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.captureDir).count == 5)
        let real = try json(f.run(["prune", "--json"]).out)
        let rp = try #require(real["pcap"] as? [String: Any])
        #expect(rp["files"] as? Int == 2 && rp["bytes"] as? Int == 2000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.captureDir).sorted()
            == ["capture-000003.pcap", "capture-000004.pcap", "notes.txt"])
        // Even a limit smaller than one file keeps the newest.
        #expect(f.run(["retention", "set", "pcap-bytes=1B"]).code == .ok)
        _ = f.run(["prune"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.captureDir).sorted() == ["capture-000004.pcap", "notes.txt"])
    }

    @Test func reclaimsSpaceAndReportsBytes() throws {
        let f = try HistoryFixture()
        let s = try f.store()
        try s.connection.transaction {
            for i in 0..<5000 {
                try s.insertFlow(FlowOpen(id: Int64(i + 1), proto: 6, src: F.alice, srcPort: UInt16(i % 60000), dst: F.printer,
                                          dstPort: 443, peer: "alice", host: "host-\(i).example", at: Self.now - 30 * Self.day, verdict: .allow))
            }
        }
        let size0 = try s.connection.scalarInt("PRAGMA page_count") ?? 0
        let dry = try json(f.run(["prune", "--dry-run", "--json"]).out)
        let dryFlows = (dry["families"] as? [[String: Any]])?.first { $0["family"] as? String == "flows" }
        #expect((dryFlows?["bytes"] as? Int ?? 0) > 100_000, "dry run estimates the flows' bytes")
        let real = f.run(["prune"])
        #expect(real.code == .ok && real.out.hasPrefix("removed 5000 rows and 0 pcap files; the store file gave back"))
        let report = try json(f.run(["prune", "--json"]).out)
        #expect(report["rows"] as? Int == 0)
        let size1 = try s.connection.scalarInt("PRAGMA page_count") ?? 0
        #expect(size1 < size0 / 2, "incremental vacuum gave the pages back (\(size0) -> \(size1))")
    }

    /// `tunnelctl prune` while the daemon's writer inserts continuously: the prune finishes,
    /// the writer never fails a batch and keeps writing. (Small here; the 1,000,000-row run
    /// with the writer's longest lock wait is `tunnelbench store prune`.)
    @Test func pruneWhileTheWriterInserts() throws {
        let f = try HistoryFixture()
        let s = try f.store()
        try s.connection.transaction {
            for i in 0..<20_000 {
                try s.insertFlow(FlowOpen(id: Int64(i + 1), proto: 6, src: F.alice, srcPort: UInt16(i % 60000), dst: F.printer,
                                          dstPort: 443, peer: "alice", at: Self.now - 30 * Self.day, verdict: .allow))
            }
        }
        let writer = try StoreWriter(path: f.storePath, options: .init(maxBatch: 1000, flushIntervalMs: 1))
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var id: Int64 = 1_000_000
            while !stop.load(ordering: .relaxed) {
                for _ in 0..<20 {
                    writer.submit(.flowOpened(FlowOpen(id: id, proto: 17, src: F.bob, srcPort: 1, dst: F.dns, dstPort: 53,
                                                       peer: "bob", at: Self.now, verdict: .allow)))
                    id += 1
                }
                usleep(2000)
            }
            done.signal()
        }.start()
        let before = writer.stats().recordsWritten
        let r = f.run(["prune", "--json"])
        stop.store(true, ordering: .relaxed)
        done.wait()
        writer.close()
        #expect(r.code == .ok, "\(r.err)")
        #expect(rows(try json(r.out))["flows"] == 20_000)
        let stats = writer.stats()
        #expect(stats.failedBatches == 0 && writer.droppedCount == 0, "\(stats)")
        #expect(stats.recordsWritten > before)
        let left = try StateStore(path: f.storePath, mode: .readOnly).flows(limit: 1_000_000)
        #expect(left.allSatisfy { $0.peer == "bob" } && left.count == Int(stats.recordsWritten))
    }
}
