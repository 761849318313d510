import Core
import Foundation
import Runtime
import Store
import Testing
import TestSupport

@testable import Daemon

/// The watchdog's own connection: a write the store refuses (locked by another process) is kept
/// and retried, the outage is visible, and refusals beyond the backlog are counted, not lost silently.
@Suite struct WindowLedgerTests {
    static func tempDir() throws -> String {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("tv-ledger-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func aLockedStoreKeepsTheWriteRetriesItAndCountsOverflow() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.db"
        let holder = try StateStore(path: path)
        let log = LogCapture()
        let ledger = WindowLedger(path: path, log: log.logger, busyTimeoutMs: 10, refusalBacklog: 2)
        try holder.connection.execute("BEGIN EXCLUSIVE")
        ledger.putWindow(SessionWindow(peer: "alice", allowedUntil: 10, reconnectAt: 20), at: 1)
        for i in 0..<3 { ledger.refusal(.session(peer: "alice", windowEnd: 10, at: 2 + Int64(i)), at: 2 + Int64(i)) }
        #expect(ledger.isFailing && ledger.outage?.sinceMs == 1)
        #expect(ledger.backlog == 3, "the window and two refusals kept")
        #expect(ledger.droppedRefusals.load(ordering: .relaxed) == 1, "the third refusal had no room: counted")
        #expect(log.all.filter { $0.contains("cannot write a window") }.count == 1, "logged once per outage")
        try holder.connection.execute("COMMIT")
        ledger.retry(now: 5)
        #expect(!ledger.isFailing && ledger.backlog == 0)
        #expect(try holder.window(peer: "alice")?.allowedUntil == 10)
        #expect(try holder.refusals(peer: "alice").first?.count == 2)
        #expect(log.all.contains { $0.contains("window writes work again") })
    }

    /// A window the watchdog opened, then moved before a locked store took it, is still stored as
    /// an opening: the peer's next window, numbered and dated when it opened, on this gateway.
    @Test func anOpeningMovedDuringAnOutageIsStillTheNextWindow() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.db"
        let holder = try StateStore(path: path)
        let ledger = WindowLedger(path: path, gateway: "gw-1", log: LogCapture().logger, busyTimeoutMs: 10)
        ledger.putWindow(SessionWindow(peer: "alice", allowedUntil: 10, reconnectAt: 20), opened: true, at: 1)
        try holder.connection.execute("BEGIN EXCLUSIVE")
        ledger.putWindow(SessionWindow(peer: "alice", allowedUntil: 100, reconnectAt: 200), opened: true, at: 30)
        ledger.putWindow(SessionWindow(peer: "alice", allowedUntil: 50, reconnectAt: 150, usedUp: 7), at: 50)
        #expect(ledger.isFailing)
        try holder.connection.execute("COMMIT")
        ledger.retry(now: 60)
        let w = try #require(try LocalSharedState(store: holder, gateway: "gw-1").window(peer: "alice"))
        #expect(w == SharedWindow(peer: "alice", epoch: 2, dates: WindowDates(allowedUntil: 50, reconnectAt: 150), usedUp: 7,
                                  gateway: "gw-1", openedAt: 30))
    }
}
