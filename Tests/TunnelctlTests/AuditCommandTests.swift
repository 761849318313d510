import Core
import Foundation
import Store
import Synchronization
import Testing

@testable import tunnelctl

/// `tunnelctl audit …`: golden output on the fixture store, the one-open-session rule, markers
/// attached to the open session, and marks written while a `StoreWriter` keeps the store busy.
@Suite struct AuditCommandTests {
    @Test func listGolden() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        let text = f.run(["audit", "list"])
        #expect(text.code == .ok && text.err.isEmpty)
        try HistoryFixture.expectGolden(text.out, "audit-list.txt")
        let json = f.run(["audit", "list", "--json"])
        #expect(json.code == .ok)
        try HistoryFixture.expectGolden(json.out, "audit-list.json")
        let recent = f.run(["audit", "list", "--since", "1h"])
        try HistoryFixture.expectGolden(recent.out, "audit-list-since.txt")
        let absolute = f.run(["audit", "list", "--since", "2026-03-01T11:00Z"])
        #expect(absolute.out == recent.out)
    }

    @Test func startStopMarkGolden() throws {
        let f = try HistoryFixture()
        // No store yet: a writing command creates it (the daemon need not have run).
        let start = f.run(["audit", "start", "printer", "test"])
        #expect(start.code == .ok && start.err.isEmpty)
        let again = f.run(["audit", "start", "second"])
        #expect(again.code == .failure)
        let mark = f.run(["audit", "mark", "paper", "jam", "--detail", "tray 2"])
        let markJSON = f.run(["audit", "mark", "--json", "toner low"])
        let stop = f.run(["audit", "stop"])
        let stopAgain = f.run(["audit", "stop"])
        #expect(stopAgain.code == .failure)
        let loose = f.run(["audit", "mark", "after"])
        try HistoryFixture.expectGolden(
            [start.out, again.err, mark.out, markJSON.out, stop.out, stopAgain.err, loose.out].joined(separator: "--\n"),
            "audit-start-stop.txt")
        let s = try StateStore(path: f.storePath, mode: .readOnly)
        let markers = try s.markers()
        #expect(markers.map(\.label) == ["paper jam", "toner low", "after"])
        #expect(markers.map(\.auditSessionId) == [1, 1, nil], "marks attach to the open audit session only")
        #expect(markers[0].detail == "tray 2" && markers.allSatisfy { $0.kind == .manual })
        #expect(try s.openAudit() == nil)
    }

    @Test func usageErrors() throws {
        let f = try HistoryFixture()
        #expect(f.run(["audit"]).code == .usage)
        #expect(f.run(["audit", "mark"]).code == .usage)
        #expect(f.run(["audit", "start"]).code == .usage)
        let typo = f.run(["audit", "strat", "x"])
        #expect(typo.code == .usage && typo.err.contains("did you mean 'start'?"))
        #expect(f.run(["audit", "list", "--since", "yesterday"]).code == .usage)
        #expect(f.run(["audit", "list", "--since", "2026-13-01"]).code == .usage)
        // Reading never creates the store.
        let missing = f.run(["audit", "list"])
        #expect(missing.code == .ok && missing.out.hasPrefix("no history yet: the store DIR/state/state.db does not exist (tunneld has not run"))
        #expect(!FileManager.default.fileExists(atPath: f.storePath))
    }

    /// The daemon's writer inserts flows continuously (busy store, short lock holds) while
    /// tunnelctl places marks: every mark succeeds, none reports "database is locked".
    @Test func marksWhileTheWriterIsBusy() throws {
        let f = try HistoryFixture()
        _ = try f.store()
        let writer = try StoreWriter(path: f.storePath, options: .init(maxBatch: 2000, flushIntervalMs: 1))
        let stop = Atomic<Bool>(false)
        let submitted = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var id: Int64 = 1
            while !stop.load(ordering: .relaxed) {
                for _ in 0..<500 {
                    writer.submit(.flowOpened(FlowOpen(id: id, proto: 6, src: HistoryFixture.alice, srcPort: UInt16(truncatingIfNeeded: id),
                                                       dst: HistoryFixture.printer, dstPort: 443, peer: "alice", at: HistoryFixture.now, verdict: .allow)))
                    id += 1
                }
                submitted.add(500, ordering: .relaxed)
                usleep(500)
            }
            done.signal()
        }.start()
        defer {
            stop.store(true, ordering: .relaxed)
            done.wait()
            writer.close()
        }
        while submitted.load(ordering: .relaxed) < 5000 { usleep(1000) }
        #expect(f.run(["audit", "start", "load"]).code == .ok)
        var failures: [String] = []
        for i in 0..<40 {
            let r = f.run(["audit", "mark", "mark \(i)"])
            if r.code != .ok { failures.append(r.err) }
        }
        #expect(f.run(["audit", "stop"]).code == .ok)
        #expect(failures.isEmpty, "marks failed under load: \(failures)")
        writer.flush()
        #expect(writer.stats().recordsWritten > 5000, "the writer kept writing meanwhile")
        let s = try StateStore(path: f.storePath, mode: .readOnly)
        #expect(try s.markers().count == 40)
        #expect(try s.markers().allSatisfy { $0.auditSessionId == 1 })
    }
}
