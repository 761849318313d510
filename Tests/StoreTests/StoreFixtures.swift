import Core
import CSQLite
import Foundation
import Synchronization
@testable import Store

/// A temporary directory removed when the value is deinitialised.
final class TempDir {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "tv-store-\(getpid())-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    var db: String { path + "/state.db" }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

enum Fixtures {
    static let v4a = IPAddress(v4: 0x0A63_0002)  // 10.99.0.2
    static let v4b = IPAddress(v4: 0xC0A8_0105)  // 192.168.1.5
    static let v6 = IPAddress(high: 0xfd99_0000_0000_0000, low: 0x1, isIPv6: true)

    static func flow(_ id: Int64, at: Int64, peer: String = "alice", verdict: Verdict = .allow) -> FlowOpen {
        FlowOpen(id: id, proto: 6, src: v4a, srcPort: UInt16(truncatingIfNeeded: 40000 + id), dst: v4b, dstPort: 443,
                 peer: peer, host: nil, at: at, verdict: verdict, rule: verdict == .allow ? nil : "10-block.rules:3")
    }

    /// Inserts `count` flows with ids from `firstId`, times `at + i`, in one transaction.
    static func insertFlows(_ store: StateStore, firstId: Int64, count: Int, at: Int64) throws {
        try store.connection.transaction {
            for i in 0..<count { try store.insertFlow(flow(firstId + Int64(i), at: at + Int64(i))) }
        }
    }

    /// Every row of every table, as text, in rowid order: equal dumps mean equal contents.
    static func dump(_ store: StateStore) throws -> String {
        let c = store.connection
        var tables: [String] = []
        let t = try c.prepared("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        while try t.step() { tables.append(t.text(0)) }
        t.reset()
        var out = ""
        for table in tables {
            out += "# \(table)\n"
            let s = try c.prepared("SELECT * FROM \(table) ORDER BY rowid")
            while try s.step() {
                for i in 0..<sqlite3_column_count(s.handle) { out += (s.optionalText(i) ?? "NULL") + "|" }
                out += "\n"
            }
            s.reset()
        }
        return out
    }

    static func count(_ store: StateStore, _ table: String) throws -> Int {
        Int(try store.connection.scalarInt("SELECT count(*) FROM \(table)") ?? -1)
    }
}

/// A thread submitting flow-opened records to a writer in bursts until stopped (a stand-in for
/// the daemon's data path). Counts what it submitted.
final class FlowProducer: @unchecked Sendable {
    // Safe because: `stopFlag` and `submitted` are atomics; `done` is a semaphore.
    private let stopFlag = Atomic<Bool>(false)
    private let submittedCount = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)

    init(writer: StoreWriter, firstId: Int64, at: Int64, burst: Int, pauseMicros: UInt32) {
        let thread = Thread { [self] in
            var id = firstId
            while !stopFlag.load(ordering: .relaxed) {
                for _ in 0..<burst {
                    writer.submit(.flowOpened(Fixtures.flow(id, at: at)))
                    id += 1
                }
                submittedCount.add(burst, ordering: .relaxed)
                usleep(pauseMicros)
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops the thread and returns how many records it submitted.
    func stop() -> Int {
        stopFlag.store(true, ordering: .relaxed)
        done.wait()
        return submittedCount.load(ordering: .relaxed)
    }
}
