import Core
import Engine
import Foundation
import Runtime
@testable import Store
import Synchronization
import Testing

@testable import Daemon

/// The daemon's automatic markers and scheduled prune (issue 6): drop windows as a pure state
/// machine, markers written from other threads through the component's own connection, the
/// rule-file hash, and the schedule's handling of retention settings.
@Suite struct DaemonMarkersTests {
    final class Dir {
        let path = NSTemporaryDirectory() + "tv-markers-\(getpid())-\(UUID().uuidString.prefix(8))"
        init() { try! FileManager.default.createDirectory(atPath: path + "/policies", withIntermediateDirectories: true) }
        var db: String { path + "/state.db" }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test func dropWindowOneMarkerPerOccurrence() throws {
        var w = DaemonMarkers.DropWindow(baseline: 5, maxWindowMs: 60_000)
        #expect(w.observe(total: 5, now: 1000) == nil, "drops before the daemon watched are not reported")
        #expect(w.observe(total: 9, now: 2000) == nil, "a window opens")
        #expect(w.observe(total: 20, now: 3000) == nil, "still dropping: same window")
        let closed = w.observe(total: 20, now: 4000)
        let m = try #require(closed, "quiet: the window closes")
        #expect(m.at == 2000 && m.kind == .automatic)
        #expect(m.detail == "dropped=15 within=2s total=20")
        #expect(w.observe(total: 20, now: 5000) == nil && w.openStart == nil)
        // A storm longer than the window gives one marker per window, never one per record.
        var markers: [MarkerInput] = []
        var total: UInt64 = 20
        for t in stride(from: Int64(10_000), through: 200_000, by: 5000) {
            total += 100
            if let m = w.observe(total: total, now: t) { markers.append(m) }
        }
        #expect(markers.count == 3, "\(markers.map(\.detail))")
        if let last = w.close(now: 205_000) { markers.append(last) }
        let lost = markers.compactMap { $0.detail?.split(separator: " ").first?.dropFirst("dropped=".count) }.compactMap { UInt64($0) }
        #expect(lost.reduce(0, +) == total - 20, "every drop is counted in exactly one marker")
        #expect(w.close(now: 300_000) == nil)
    }

    @Test func markersFromAnyThreadAreWritten() throws {
        let dir = Dir()
        try "default allow\nblock proto tcp port 25\n".write(toFile: dir.path + "/policies/10-a.rules", atomically: true, encoding: .utf8)
        let dropped = Atomic<UInt64>(0)
        let clock = Atomic<Int64>(1_000_000)
        let logs = LogCapture()
        let markers = try DaemonMarkers(storePath: dir.db, log: logs.logger, now: { clock.load(ordering: .relaxed) },
                                        droppedCount: { dropped.load(ordering: .relaxed) }, dropCheckIntervalMs: 10)
        markers.start()
        markers.daemonStarted(version: "0.1.0", pid: 42, generation: 1, ruleCount: 1, policyDirectory: dir.path + "/policies")
        let hash1 = DaemonMarkers.ruleHash(directory: dir.path + "/policies")
        #expect(hash1.hasPrefix("blake2s:") && hash1.count == "blake2s:".count + 32)
        #expect(DaemonMarkers.ruleHash(directory: dir.path + "/policies") == hash1, "stable")
        try "default allow\n".write(toFile: dir.path + "/policies/10-a.rules", atomically: true, encoding: .utf8)
        let hash2 = DaemonMarkers.ruleHash(directory: dir.path + "/policies")
        #expect(hash2 != hash1, "an edit changes the hash")
        let policies = dir.path + "/policies"
        let t = Thread { markers.policyReloaded(generation: 2, ruleCount: 0, directory: policies) }
        t.start()
        // Drops: the counter grows, then stays: one marker.
        dropped.store(9, ordering: .relaxed)
        var waited = 0
        while markers.writtenCount < 3 && waited < 500 {
            usleep(10_000)
            waited += 1
        }
        usleep(50_000)  // a few more checks without growth: no further marker
        markers.daemonStopping(reason: "signal 15")
        markers.stop()
        markers.stop()  // idempotent
        let store = try StateStore(path: dir.db, mode: .readOnly)
        let rows = try store.markers()
        let labels = rows.map(\.label)
        #expect(labels.contains("tunneld started") && labels.contains("policy reloaded"))
        #expect(labels.last == "tunneld stopping" || labels.contains("tunneld stopping"))
        #expect(rows.allSatisfy { $0.kind == .automatic })
        let reload = try #require(rows.first { $0.label == "policy reloaded" })
        #expect(reload.detail == "generation=2 rules=0 files=\(hash2)")
        let started = try #require(rows.first { $0.label == "tunneld started" })
        #expect(started.detail == "version=0.1.0 pid=42 generation=1 rules=1 files=\(hash1)")
        let dropMarkers = rows.filter { $0.label.hasPrefix("store queue full") }
        #expect(dropMarkers.count == 1 && dropMarkers[0].detail?.hasPrefix("dropped=9 ") == true, "\(dropMarkers)")
        #expect(logs.all.isEmpty, "\(logs.all)")
    }

    /// The settings and prune errors above must reach the log at the daemon's default level.
    @Test func loggerKeepsErrorsDropsDebug() {
        let lines = Mutex<[String]>([])
        let log = Logger(minimum: .info) { level, m in lines.withLock { $0.append("<\(level.rawValue)>\(m)") } }
        log.error("e")
        log.warning("w")
        log.info("i")
        log.debug("d")
        #expect(lines.withLock { $0 } == ["<3>e", "<4>w", "<6>i"])
    }

    @Test func pruneScheduleUsesTheSettingsRow() throws {
        let dir = Dir()
        let now: Int64 = 1_772_366_400_000
        let day: Int64 = 86_400_000
        let store = try StateStore(path: dir.db)
        for i in 0..<50 {
            try store.insertFlow(FlowOpen(id: Int64(i + 1), proto: 17, src: IPAddress(v4: 1), srcPort: 1, dst: IPAddress(v4: 2),
                                          dstPort: 53, peer: "alice", at: now - Int64(i) * day, verdict: .allow))
        }
        try store.addMarker(MarkerInput(at: now - 30 * day, label: "old", kind: .manual))
        let logs = LogCapture()
        let schedule = try PruneSchedule(storePath: dir.db, captureDirectory: dir.path + "/capture", log: logs.logger, now: { now })

        // Not JSON: skipped (the operator's limits are unknown), logged, nothing deleted.
        try store.putSettingsText("{oops", at: now)
        #expect(schedule.runOnce() == nil)
        #expect(try store.flows().count == 50)
        #expect(logs.all.contains { $0.hasPrefix("<3>prune: the settings row is not a JSON object") }, "\(logs.all)")
        #expect(PruneSchedule.loadSettings(store, log: logs.logger) == .factory)

        // Tolerant: a missing field takes its factory value (markers 365d); flows=10d applies.
        try store.putSettingsText(#"{"retention":{"flows":"10d"}}"#, at: now)
        let report = try #require(schedule.runOnce())
        #expect(report.rows[.flows] == 39, "flows last seen more than 10 days ago")
        #expect(report.rows[.markers] == 0)
        #expect(try store.flows().count == 11)
        #expect(schedule.status.runs == 1)

        // The thread: runs at start, stops promptly.
        try store.putSettingsText(#"{"retention":{"flows":"2d"}}"#, at: now)
        schedule.start()
        var waited = 0
        while schedule.status.runs < 2 && waited < 500 { usleep(10_000); waited += 1 }
        schedule.stop()
        #expect(schedule.status.runs == 2)
        #expect(try store.flows().count == 3)
    }

    /// With a shared store (issue 19) each scheduled run prunes its history with the same
    /// retention, every gateway's rows, open sessions kept; an unreachable one is logged and the
    /// local prune is done all the same.
    @Test func pruneScheduleAlsoPrunesTheSharedStore() throws {
        let dir = Dir()
        let now: Int64 = 1_772_366_400_000
        let day: Int64 = 86_400_000
        let store = try StateStore(path: dir.db)
        try store.putSettingsText(#"{"retention":{"flows":"10d","sessions":"30d"}}"#, at: now)
        let sharedPath = dir.path + "/shared.db"
        let shared = try SQLiteSharedState(path: sharedPath)
        func flow(_ id: Int64, _ age: Int64) -> Flow {
            Flow(id: id, proto: 17, src: IPAddress(v4: 1), srcPort: 1, dst: IPAddress(v4: 2), dstPort: 53, peer: "alice", host: nil,
                 firstSeen: now - age, lastSeen: now - age, counters: FlowCounters(), verdict: .allow, rule: nil, capture: nil,
                 closedAt: nil, closeReason: nil)
        }
        for g in ["gw-a", "gw-b"] {
            try shared.ship(HistoryBatch(gateway: g, flows: (1...20).map { flow($0, $0 * day) },
                                         sessions: [Session(id: 1, peer: "alice", startedAt: now - 90 * day, endedAt: now - 40 * day,
                                                            endReason: .idle, rxBytes: 0, txBytes: 0),
                                                    Session(id: 2, peer: "alice", startedAt: now - 90 * day, endedAt: nil, endReason: nil,
                                                            rxBytes: 0, txBytes: 0)]))
        }
        let logs = LogCapture()
        let path = sharedPath
        let schedule = try PruneSchedule(storePath: dir.db, captureDirectory: dir.path + "/capture", log: logs.logger, now: { now },
                                         shared: { try SQLiteSharedState(path: path) })
        #expect(schedule.runOnce() != nil)
        #expect(schedule.lastSharedPrune == HistoryCounts(flows: 20, sessions: 2), "flows 11…20 days old and the ended session, of both gateways")
        #expect(try shared.historyCounts(gateway: nil) == HistoryCounts(flows: 20, sessions: 2))
        #expect(try shared.historySessions(since: .min, peer: nil, gateway: nil, limit: 10).allSatisfy { $0.endedAt == nil }, "open sessions stay")
        #expect(logs.all.contains { $0.contains("removed 22 rows of the shared store (sqlite): flows=20 sessions=2") }, "\(logs.all)")

        // Unreachable: logged, the local prune still ran; the next run tries again.
        struct Down: Error, CustomStringConvertible { var description: String { "connection refused (test)" } }
        let down = try PruneSchedule(storePath: dir.db, captureDirectory: dir.path + "/capture", log: logs.logger, now: { now },
                                     shared: { throw Down() })
        #expect(down.runOnce() != nil && down.status.runs == 1 && down.lastSharedPrune == nil)
        #expect(logs.all.contains { $0.hasPrefix("<3>prune of the shared store: connection refused (test); tried again") }, "\(logs.all)")
    }
    /// With a shared store its retention (schema v5) is what every run prunes with; it is kept in
    /// the local row (capture untouched), so a run while the store is away — even after a restart —
    /// prunes with the last shared retention read; the fall-back is logged once, the recovery too.
    @Test func pruneScheduleUsesTheSharedRetention() throws {
        let dir = Dir()
        let now: Int64 = 1_772_366_400_000
        let day: Int64 = 86_400_000
        let store = try StateStore(path: dir.db)
        func addFlows(from: Int64) throws {
            for i in 0..<50 {
                try store.insertFlow(FlowOpen(id: from + Int64(i), proto: 17, src: IPAddress(v4: 1), srcPort: UInt16(1 + i), dst: IPAddress(v4: 2),
                                              dstPort: 53, peer: "alice", at: now - Int64(i) * day, verdict: .allow))
            }
        }
        try addFlows(from: 1)
        try store.putSettingsText(#"{"retention":{"flows":"forever"},"capture":{"enabled":true,"detail":"full"}}"#, at: now)
        let memory = MemorySharedState()
        var tenDays = Settings.factory
        try tenDays.set("flows", "10d")
        _ = try memory.connect().setSettings(text: tenDays.sharedJSON, gateway: "gw-b", at: now - 60_000)
        let logs = LogCapture()
        let schedule = try PruneSchedule(storePath: dir.db, captureDirectory: dir.path + "/capture", log: logs.logger, now: { now },
                                         shared: { try memory.connect() })
        let first = try #require(schedule.runOnce())
        #expect(first.rows[.flows] == 39, "the shared 10d, not the local forever")
        #expect(schedule.retentionOrigin == .shared(gateway: "gw-b", at: now - 60_000))
        #expect(logs.all.contains { $0.hasPrefix("<6>settings: retention from the shared store (set on gw-b at 2026-03-01T11:59:00.000Z): flows=10d") }, "\(logs.all)")
        let copy = try store.settings().settings
        #expect(copy.retention == tenDays.retention && copy.capture.enabled && copy.capture.detail == .full, "kept locally, capture untouched")

        // Changed on another gateway, then the store goes away before this one reads it: the last
        // one read (10d) prunes; logged once however many runs.
        var twoDays = Settings.factory
        try twoDays.set("flows", "2d")
        _ = try memory.connect().setSettings(text: twoDays.sharedJSON, gateway: "gw-b", at: now)
        memory.down = true
        try addFlows(from: 100)
        #expect(schedule.runOnce()?.rows[.flows] == 39)
        #expect(schedule.runOnce()?.rows[.flows] == 0)
        #expect(schedule.retentionOrigin == .lastShared(gateway: "gw-b", at: now - 60_000))
        #expect(logs.all.filter { $0.hasPrefix("<4>settings: cannot read the shared store's retention (connection refused (test))") }.count == 1, "\(logs.all)")
        // A restart while it is away: the local row holds the last shared retention.
        let restarted = try PruneSchedule(storePath: dir.db, captureDirectory: dir.path + "/capture", log: logs.logger, now: { now },
                                          shared: { try memory.connect() })
        try addFlows(from: 200)
        #expect(restarted.runOnce()?.rows[.flows] == 39)
        #expect(restarted.retentionOrigin == .lastShared(gateway: nil, at: nil))
        // Back: the newer 2d applies and is kept locally; the recovery is logged.
        memory.down = false
        #expect(restarted.runOnce()?.rows[.flows] == (11 - 3) * 3)
        #expect(logs.all.contains("<5>settings: the shared store's retention reads again"), "\(logs.all)")
        #expect(try store.settings().settings.retention == twoDays.retention)
        #expect(try store.settings().settings.capture.enabled)
    }
    /// Between runs (hourly) the thread reads the shared retention every `settingsIntervalMs` and
    /// keeps it in the local row: another gateway's change reaches this gateway's copy quickly.
    @Test func theSharedRetentionIsReadBetweenRuns() throws {
        let dir = Dir()
        let now: Int64 = 1_772_366_400_000
        let store = try StateStore(path: dir.db)
        let memory = MemorySharedState()
        let logs = LogCapture()
        let schedule = try PruneSchedule(storePath: dir.db, captureDirectory: dir.path + "/capture", log: logs.logger, now: { now },
                                         shared: { try memory.connect() }, settingsIntervalMs: 100)
        schedule.start()
        defer { schedule.stop() }
        var waited = 0
        while schedule.status.runs < 1 && waited < 500 { usleep(10_000); waited += 1 }
        var s = Settings.factory
        try s.set("flows", "5d")
        _ = try memory.connect().setSettings(text: s.sharedJSON, gateway: "gw-b", at: now)
        waited = 0
        while (try? store.settings().settings.retention) != s.retention && waited < 300 { usleep(10_000); waited += 1 }
        #expect(try store.settings().settings.retention == s.retention, "copied within a few polls")
        #expect(schedule.status.runs == 1, "no prune ran for it")
    }
}
