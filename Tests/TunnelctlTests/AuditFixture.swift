import Core
import Foundation
import Store
import Testing

@testable import tunnelctl

/// Shared setup of the history-command tests (audit, timeline, retention, prune): a temporary
/// state directory with a config file, a fixture store with known rows, a fixed "now", TZ=UTC,
/// a golden-file helper and a content checksum of the store.
final class HistoryFixture {
    /// 2026-03-01T12:00:00Z, the "now" of every history test.
    static let now: Int64 = 1_772_366_400_000
    static let minute: Int64 = 60_000
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    /// Fixed clock and time zone, set once per process (all history tests use the same values).
    static let setUp: Void = {
        setenv("TZ", "UTC", 1)
        tzset()
        Tunnelctl.clockOverride.withLock { $0 = now }
    }()

    static let goldenSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let golden = Bundle.module.url(forResource: "Golden", withExtension: nil)!

    let dir: String
    var config: String { dir + "/tunneld.conf" }
    var storePath: String { dir + "/state/state.db" }
    var captureDir: String { dir + "/state/capture" }

    /// A directory with a config; the store is created by `store()` or by a writing command.
    init() throws {
        _ = HistoryFixture.setUp
        dir = NSTemporaryDirectory() + "tv-history-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir + "/policies", withIntermediateDirectories: true)
        try """
            [Interface]
            PrivateKeyFile = \(dir)/gateway.key
            Address = 10.99.0.1/24
            StateDirectory = \(dir)/state
            RuntimeDirectory = \(dir)/run
            PolicyDirectory = \(dir)/policies
            """.write(toFile: config, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// Opens (creating) the fixture's store.
    func store() throws -> StateStore {
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
        return try StateStore(path: storePath)
    }

    /// Runs tunnelctl with `--config` appended; the directory is replaced by DIR in the output.
    func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        let console = Console(capturing: true)
        let code = Tunnelctl.run(argv + ["--config", config], console: console)
        return (code, console.out.replacingOccurrences(of: dir, with: "DIR"), console.err.replacingOccurrences(of: dir, with: "DIR"))
    }

    /// Compares `text` with the golden file `name` (TUNNELVISION_UPDATE_GOLDEN=1 rewrites it).
    static func expectGolden(_ text: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if ProcessInfo.processInfo.environment["TUNNELVISION_UPDATE_GOLDEN"] == "1" {
            try text.write(to: goldenSource.appendingPathComponent(name), atomically: true, encoding: .utf8)
            return
        }
        let want = try String(contentsOf: golden.appendingPathComponent(name), encoding: .utf8)
        #expect(text == want, "golden \(name) differs:\n\(text)", sourceLocation: sourceLocation)
    }

    /// Every row of every table (quoted values, rowid order) plus the settings row: equal
    /// checksums mean the store's contents did not change.
    static func checksum(_ store: StateStore) throws -> String {
        let c = store.connection
        var tables: [String] = []
        let t = try c.prepared("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        while try t.step() { tables.append(t.text(0)) }
        t.reset()
        var out = ""
        for table in tables {
            var columns: [String] = []
            let info = try c.prepared("SELECT name FROM pragma_table_info('\(table)')")
            while try info.step() { columns.append(info.text(0)) }
            info.reset()
            out += "# \(table)\n"
            let s = try c.prepared("SELECT " + columns.map { "quote(\"\($0)\")" }.joined(separator: " || '|' || ") + " FROM \(table) ORDER BY rowid")
            while try s.step() { out += s.text(0) + "\n" }
            s.reset()
        }
        return out
    }

    static let alice = IPAddress(v4: 0x0A63_0002)  // 10.99.0.2
    static let bob = IPAddress(v4: 0x0A63_0003)  // 10.99.0.3
    static let printer = IPAddress(v4: 0xC0A8_0105)  // 192.168.1.5
    static let dns = IPAddress(v4: 0xC0A8_0101)  // 192.168.1.1

    /// The fixture history, relative to `now` (2026-03-01 12:00 UTC):
    ///
    /// - 08:00 marker (automatic) "tunneld started"
    /// - 08:30 alice's session starts; 08:40 flow 1 (tcp to the printer, host printer.lan)
    /// - 09:00 audit session 1 "printer test" starts; 09:30 marker "printer on" (in it)
    /// - 08:50 flow 1 closes (fin); 09:45 alice's session ends (free-limit)
    /// - 10:00 alice is refused (session, 12 attempts until 11:00); audit 1 stops
    /// - 11:10 bob's session starts (open); 11:20 flow 3 blocked (smtp), refused 3 times
    /// - 11:30 audit session 2 "incident 42" (open); 11:40 marker "seen the alert"; 11:45 flow 2 (dns, open)
    func buildHistory() throws {
        let s = try store()
        let n = HistoryFixture.now, h = HistoryFixture.hour, m = HistoryFixture.minute
        typealias F = HistoryFixture
        try s.addMarker(MarkerInput(at: n - 4 * h, label: "tunneld started", kind: .automatic, detail: "version=0.1.0 generation=1 rules=3"))
        _ = try s.openSession(peer: "alice", at: n - 3 * h - 30 * m)
        try s.insertFlow(FlowOpen(id: 1, proto: 6, src: F.alice, srcPort: 40001, dst: F.printer, dstPort: 443, peer: "alice",
                                  host: "printer.lan", at: n - 3 * h - 20 * m, verdict: .allow,
                                  decision: DecidedRule(generation: 1, place: "20-lan.rules:4", name: "printer", reason: "printer", tier: "free")))
        try s.closeFlow(FlowClose(id: 1, at: n - 3 * h - 10 * m, counters: FlowCounters(bytesOut: 2048, bytesIn: 10_240, packetsOut: 10, packetsIn: 12), reason: "fin"))
        try s.startAudit(label: "printer test", at: n - 3 * h)
        try s.addMarker(MarkerInput(at: n - 2 * h - 30 * m, label: "printer on", kind: .manual))
        _ = try s.closeSession(SessionClose(peer: "alice", at: n - 2 * h - 15 * m, reason: .freeLimit, rxBytes: 30_000, txBytes: 500_000))
        try s.recordRefusal(.session(peer: "alice", windowEnd: n - 2 * h - 15 * m, at: n - 2 * h, count: 11))
        try s.recordRefusal(.session(peer: "alice", windowEnd: n - 2 * h - 15 * m, at: n - h, count: 1))
        try s.stopAudit(at: n - 2 * h)
        _ = try s.openSession(peer: "bob", at: n - 50 * m)
        // Decided by generation 2 (a reload at 11:00 put `no-mail` at 10-block.rules:3).
        let nomail = DecidedRule(generation: 2, place: "10-block.rules:3", name: "no-mail", reason: "no mail from peers", tier: "premium")
        try s.insertFlow(FlowOpen(id: 3, proto: 6, src: F.bob, srcPort: 50000, dst: F.printer, dstPort: 25, peer: "bob",
                                  at: n - 40 * m, verdict: .block, decision: nomail))
        try s.recordRefusal(.flow(peer: "bob", decision: nomail, proto: 6, dst: F.printer, dstPort: 25, at: n - 40 * m, count: 3))
        try s.startAudit(label: "incident 42", at: n - 30 * m)
        try s.addMarker(MarkerInput(at: n - 20 * m, label: "seen the alert", kind: .manual, detail: "ticket 42"))
        try s.insertFlow(FlowOpen(id: 2, proto: 17, src: F.alice, srcPort: 53_000, dst: F.dns, dstPort: 53, peer: "alice",
                                  at: n - 15 * m, verdict: .allow))
    }
}
