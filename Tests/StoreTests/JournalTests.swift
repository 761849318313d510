import Core
import Foundation
import Testing
@testable import Store

/// The history journal for a shared store (schema v5, issue 19).
@Suite struct JournalTests {
    let t0: Int64 = 1_760_000_000_000

    @Test func nothingIsQueuedWithoutATarget() throws {
        let dir = TempDir()
        let store = try StateStore(path: dir.db)
        try Fixtures.insertFlows(store, firstId: 1, count: 10, at: t0)
        _ = try store.openSession(peer: "alice", at: t0)
        #expect(try store.journalDepth() == 0)
        #expect(try store.journalTarget() == nil)
        let chunk = try store.journalChunk(limit: 100)
        #expect(chunk.through == 0 && chunk.batch.count == 0)
    }

    @Test func everyFamilyIsQueuedInOrderAndShippedWithItsCurrentValues() throws {
        let dir = TempDir()
        let store = try StateStore(path: dir.db)
        try store.setJournalTarget(gateway: "gw-a", at: t0)
        #expect(try store.journalTarget() == "gw-a")
        try store.insertFlow(Fixtures.flow(7, at: t0))
        let sid = try store.openSession(peer: "alice", at: t0 + 1)
        try store.recordRefusal(.session(peer: "bob", windowEnd: t0, at: t0 + 2))
        try store.recordRefusal(.session(peer: "bob", windowEnd: t0, at: t0 + 3))  // coalesced: an update
        _ = try store.addMarker(MarkerInput(at: t0 + 4, label: "audit point", kind: .manual))
        try store.updateFlow(FlowUpdate(id: 7, lastSeen: t0 + 5, counters: FlowCounters(bytesOut: 100, bytesIn: 200, packetsOut: 1, packetsIn: 2)))
        _ = try store.closeSession(SessionClose(peer: "alice", at: t0 + 6, reason: .freeLimit, rxBytes: 9, txBytes: 8))
        // flow insert+update, session insert+update, refusal insert+update, marker insert.
        #expect(try store.journalDepth() == 7)
        let chunk = try store.journalChunk(limit: 100)
        #expect(chunk.changes == 7 && chunk.missing == 0)
        #expect(chunk.batch.gateway == "gw-a")
        #expect(chunk.batch.flows.map(\.id) == [7])
        #expect(chunk.batch.flows[0].counters.bytesIn == 200 && chunk.batch.flows[0].lastSeen == t0 + 5)
        #expect(chunk.batch.sessions.map(\.id) == [sid])
        #expect(chunk.batch.sessions[0].endReason == .freeLimit && chunk.batch.sessions[0].rxBytes == 9)
        #expect(chunk.batch.refusals.count == 1 && chunk.batch.refusals[0].count == 2)
        #expect(chunk.batch.markers.map(\.label) == ["audit point"])
        try store.journalShipped(through: chunk.through)
        #expect(try store.journalDepth() == 0)
        #expect(try store.journalChunk(limit: 100).through == 0)
    }

    @Test func chunksCoverAPrefixAndTheDepthStaysExact() throws {
        let dir = TempDir()
        let store = try StateStore(path: dir.db)
        try store.setJournalTarget(gateway: "gw-a", at: t0)
        try Fixtures.insertFlows(store, firstId: 1, count: 25, at: t0)
        var seen: [Int64] = []
        var rounds = 0
        while true {
            let c = try store.journalChunk(limit: 10)
            if c.through == 0 { break }
            seen += c.batch.flows.map(\.id)
            try store.journalShipped(through: c.through)
            rounds += 1
            #expect(try store.journalDepth() == Int64((rounds >= 2 ? 26 : 25) - seen.count))
            // A row changed while earlier chunks ship is queued again behind them.
            if rounds == 1 {
                try store.updateFlow(FlowUpdate(id: 1, lastSeen: t0 + 99, counters: FlowCounters()))
            }
        }
        #expect(rounds == 3)
        #expect(seen == Array(1...25) + [1])
    }

    @Test func aRowPrunedBeforeItShippedIsCountedMissing() throws {
        let dir = TempDir()
        let store = try StateStore(path: dir.db)
        try store.setJournalTarget(gateway: "gw-a", at: t0)
        try Fixtures.insertFlows(store, firstId: 1, count: 4, at: t0)
        try store.connection.execute("DELETE FROM flows WHERE id IN (2, 3)")
        let c = try store.journalChunk(limit: 100)
        #expect(c.changes == 4 && c.missing == 2)
        #expect(c.batch.flows.map(\.id) == [1, 4])
    }

    @Test func aLocalStoreAgainDropsTheJournalAndSaysHowMuch() throws {
        let dir = TempDir()
        let store = try StateStore(path: dir.db)
        try store.setJournalTarget(gateway: "gw-a", at: t0)
        try Fixtures.insertFlows(store, firstId: 1, count: 3, at: t0)
        #expect(try store.setJournalTarget(gateway: nil, at: t0) == 3)
        #expect(try store.journalDepth() == 0)
        try Fixtures.insertFlows(store, firstId: 10, count: 3, at: t0)
        #expect(try store.journalDepth() == 0)
        // Another process (tunnelctl mark) writing while a target is set is journalled too.
        try store.setJournalTarget(gateway: "gw-b", at: t0)
        let other = try StateStore(path: dir.db)
        _ = try other.addMarker(MarkerInput(at: t0, label: "from tunnelctl", kind: .manual))
        #expect(try store.journalChunk(limit: 10).batch.markers.map(\.label) == ["from tunnelctl"])
    }
}
