import Core
import Runtime
import Testing
@testable import Store

@Suite struct QueryTests {
    @Test func windowsPutGetReplaceDelete() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        #expect(try store.window(peer: "alice") == nil)
        try store.putWindow(SessionWindow(peer: "alice", allowedUntil: 900_000, reconnectAt: 3_600_000))
        try store.putWindow(SessionWindow(peer: "bob", allowedUntil: 1, reconnectAt: 2))
        try store.putWindow(SessionWindow(peer: "alice", allowedUntil: 5_000_000, reconnectAt: 7_700_000))
        #expect(try store.window(peer: "alice") == SessionWindow(peer: "alice", allowedUntil: 5_000_000, reconnectAt: 7_700_000))
        #expect(try store.windows().map(\.peer) == ["alice", "bob"])
        #expect(try store.deleteWindow(peer: "bob"))
        #expect(try !store.deleteWindow(peer: "bob"))
        // Windows survive reopening (a restarted daemon must not hand out a fresh one).
        let reopened = try StateStore(path: dir.db, mode: .readOnly)
        #expect(try reopened.window(peer: "alice")?.allowedUntil == 5_000_000)
    }

    @Test func sessionsOpenCloseListAndCrashRecovery() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        try store.openSession(peer: "alice", at: 1000)
        try store.openSession(peer: "bob", at: 2000)
        try store.openSession(peer: "carol", at: 9000)
        #expect(try store.closeSession(SessionClose(peer: "alice", at: 5000, reason: .freeLimit, rxBytes: 10, txBytes: 20)) == 1)
        #expect(try store.closeSession(SessionClose(peer: "alice", at: 6000, reason: .idle)) == 0)
        #expect(try store.openSessions().map(\.peer) == ["bob", "carol"])
        let alice = try #require(try store.sessions(peer: "alice").first)
        #expect(alice.endedAt == 5000 && alice.endReason == .freeLimit && alice.rxBytes == 10 && alice.txBytes == 20)

        try store.daemonStarted(pid: 42, at: 100)
        try store.heartbeat(at: 7000)
        try store.heartbeat(at: 6000)  // never backwards
        #expect(try store.daemonState() == DaemonState(pid: 42, startedAt: 100, heartbeatAt: 7000, droppedRecords: 0))
        try store.heartbeat(at: 7000, droppedRecords: 12)
        #expect(try store.daemonState()?.droppedRecords == 12)
        // carol started after the last heartbeat: the proof of life is her start.
        let alive = try #require(try store.lastProvenAlive())
        #expect(alive == 9000)
        #expect(try store.closeAllOpenSessionsAsCrash(at: 7000) == 2)
        #expect(try store.openSessions().isEmpty)
        let ended = try store.sessions().sorted { $0.peer < $1.peer }
        #expect(ended.map(\.endReason) == [.freeLimit, .crash, .crash])
        #expect(ended.map(\.endedAt) == [5000, 7000, 9000])  // never before the start
        #expect(try store.sessions(since: 8000).map(\.peer) == ["carol"])
    }

    /// Crash recovery closes flow rows too (issue 13 defect 3: open flows grew over kill -9 rounds):
    /// every open flow ends `crash` at the proven-alive time, never before its last packet.
    @Test func crashRecoveryClosesOpenFlows() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        try Fixtures.insertFlows(store, firstId: 1, count: 4, at: 1000)  // last_seen 1000…1003
        try store.closeFlow(FlowClose(id: 2, at: 1500, counters: FlowCounters(), reason: "fin", capture: nil))
        #expect(try store.openRowCounts().flows == 3)
        #expect(try store.closeAllOpenFlowsAsCrash(at: 1002) == 3)
        #expect(try store.openRowCounts().flows == 0)
        let flows = try store.flows().sorted { $0.id < $1.id }
        #expect(flows.map(\.closeReason) == ["crash", "fin", "crash", "crash"])
        #expect(flows.map(\.closedAt) == [1002, 1500, 1002, 1003])
        #expect(try store.closeAllOpenFlowsAsCrash(at: 9999) == 0, "idempotent")
    }

    @Test func sessionRefusalsCoalesceOneRowPerPeerAndWindow() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        for i in 0..<12 { try store.recordRefusal(.session(peer: "alice", windowEnd: 900_000, at: 1_000_000 + Int64(i) * 5000)) }
        try store.recordRefusal(.session(peer: "alice", windowEnd: 5_000_000, at: 6_000_000))
        try store.recordRefusal(.session(peer: "bob", windowEnd: 900_000, at: 1_000_000, count: 3))
        let alice = try store.refusals(peer: "alice")
        #expect(alice.count == 2)
        let first = try #require(alice.last)
        #expect(first.kind == .session && first.count == 12 && first.firstAt == 1_000_000 && first.lastAt == 1_055_000 && first.window == 900_000)
        #expect(try store.refusals(peer: "bob").first?.count == 3)
        #expect(try store.refusals(since: 1_050_000).count == 2)
    }

    @Test func flowRefusalsCoalescePerRuleDestinationAndHour() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        let hour = StateStore.flowRefusalPeriodMs
        let e = RefusalEvent.flow(peer: "alice", rule: "10-block.rules:3", reason: "no SMTP", proto: 6, dst: Fixtures.v4b, dstPort: 25, at: 10)
        try store.recordRefusal(e)
        var later = e
        later.at = hour - 1
        try store.recordRefusal(later)
        later.at = hour
        try store.recordRefusal(later)
        var v6 = e
        v6.dst = Fixtures.v6
        try store.recordRefusal(v6)
        let rows = try store.refusals(kind: .flow).sorted { ($0.flowKey, $0.window) < ($1.flowKey, $1.window) }
        #expect(rows.map(\.flowKey) == ["tcp 192.168.1.5:25", "tcp 192.168.1.5:25", "tcp [fd99::1]:25"])
        #expect(rows.map(\.count) == [2, 1, 1])
        #expect(rows.map(\.window) == [0, hour, 0])
        #expect(StateStore.flowRefusalBucket(-1) == -hour)
        let key = StateStore.flowKey(proto: 6, dst: Fixtures.v6, dstPort: 25)
        #expect(try store.refusals(flowKey: key).map(\.count) == [1])
    }

    /// A flow refusal row carries the host its flows were known by (issue 14): the newest one
    /// named, kept when a later attempt had none; session rows have none.
    @Test func flowRefusalsKeepTheNewestHost() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        var e = RefusalEvent.flow(peer: "alice", rule: "50-ads.rules:2", reason: "ads", proto: 6, dst: Fixtures.v4b, dstPort: 443, at: 10)
        try store.recordRefusal(e)
        #expect(try store.refusals(kind: .flow).map(\.host) == [""])
        e.host = "ads.example.com"
        e.at = 20
        try store.recordRefusal(e)
        e.host = nil
        e.at = 30
        try store.recordRefusal(e)
        #expect(try store.refusals(kind: .flow).map(\.host) == ["ads.example.com"])
        e.host = "track.example.com"
        e.at = 40
        try store.recordRefusal(e)
        let row = try #require(try store.refusals(kind: .flow).first)
        #expect(row.host == "track.example.com" && row.count == 4)
        try store.recordRefusal(.session(peer: "bob", windowEnd: 5, at: 50))
        #expect(try store.refusals(kind: .session).map(\.host) == [""])
    }

    @Test func flowsInsertUpdateCloseAndList() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        var f = Fixtures.flow(7, at: 1000)
        f.src = Fixtures.v6
        f.capture = CaptureLocation(fileSequence: 3, offset: 4096)
        try store.insertFlow(f)
        try store.insertFlow(Fixtures.flow(8, at: 2000, peer: "bob", verdict: .block))
        try store.updateFlow(FlowUpdate(id: 7, lastSeen: 3000, counters: FlowCounters(bytesOut: 100, bytesIn: 2000, packetsOut: 2, packetsIn: 3),
                                        host: "example.com"))
        try store.closeFlow(FlowClose(id: 7, at: 4000, counters: FlowCounters(bytesOut: 150, bytesIn: 2500, packetsOut: 3, packetsIn: 4), reason: "fin"))
        try store.updateFlow(FlowUpdate(id: 99, lastSeen: 1, counters: FlowCounters()))  // gone: no-op
        let got = try #require(try store.flow(id: 7))
        #expect(got.src == Fixtures.v6 && got.dst == Fixtures.v4b && got.srcPort == 40007 && got.dstPort == 443 && got.proto == 6)
        #expect(got.host == "example.com" && got.firstSeen == 1000 && got.lastSeen == 4000 && got.closedAt == 4000 && got.closeReason == "fin")
        #expect(got.counters == FlowCounters(bytesOut: 150, bytesIn: 2500, packetsOut: 3, packetsIn: 4))
        #expect(got.capture == CaptureLocation(fileSequence: 3, offset: 4096))
        #expect(try store.flows().map(\.id) == [7, 8])
        #expect(try store.flows(peer: "bob").map(\.id) == [8])
        #expect(try store.flows(blockedOnly: true).map(\.id) == [8])
        #expect(try store.flows(since: 3500).map(\.id) == [7])
        #expect(try store.flow(id: 8)?.rule == "10-block.rules:3")
        #expect(try store.maxFlowId() == 8)
        #expect(try store.flow(id: 1) == nil)
        // A flow opened before capture: an update (or the close) gives it a location once; the first stays.
        let later = CaptureLocation(fileSequence: 5, offset: 24)
        try store.updateFlow(FlowUpdate(id: 8, lastSeen: 2100, counters: FlowCounters()))
        #expect(try store.flow(id: 8)?.capture == nil)
        try store.updateFlow(FlowUpdate(id: 8, lastSeen: 2200, counters: FlowCounters(), capture: later))
        try store.updateFlow(FlowUpdate(id: 8, lastSeen: 2300, counters: FlowCounters(),
                                        capture: CaptureLocation(fileSequence: 6, offset: 24)))
        try store.closeFlow(FlowClose(id: 8, at: 2400, counters: FlowCounters(), reason: "idle", capture: CaptureLocation(fileSequence: 7, offset: 24)))
        try store.updateFlow(FlowUpdate(id: 7, lastSeen: 4100, counters: FlowCounters(), capture: later))
        #expect(try store.flow(id: 8)?.capture == later)
        #expect(try store.flow(id: 7)?.capture == CaptureLocation(fileSequence: 3, offset: 4096))
    }

    @Test func addressTextIsCanonical() {
        #expect(Fixtures.v4b.description == "192.168.1.5")
        #expect(Fixtures.v6.description == "fd99::1")
        #expect(IPAddress(high: 0x2001_0db8_0000_0000, low: 0x0001_0000_0000_0001, isIPv6: true).description == "2001:db8::1:0:0:1")
        #expect(IPAddress(high: 0, low: 0, isIPv6: true).description == "::")
        #expect(IPAddress(high: 0x2001_0db8_0000_0001, low: 0x0001_0001_0001_0001, isIPv6: true).description == "2001:db8:0:1:1:1:1:1")
        #expect(IPAddress(blob: [10, 0, 0, 1]) == IPAddress(v4: 0x0A00_0001))
        #expect(IPAddress(blob: [1, 2, 3]) == nil)
    }

    @Test func auditOneOpenAtATimeAndMarkersAttach() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        #expect(throws: StoreError.noOpenAudit) { try store.stopAudit(at: 1) }
        try store.addMarker(MarkerInput(at: 50, label: "before", kind: .manual))
        let a = try store.startAudit(label: "printer test", at: 100)
        do {
            try store.startAudit(label: "another", at: 150)
            Issue.record("a second audit session opened")
        } catch let e as StoreError {
            #expect(e == .auditAlreadyOpen(a))
            #expect(e.description.contains("'printer test' is already open (since \(TimeText.local(0, zone: TimeText.displayZone)))") && e.description.contains("stop it first"))
        }
        let m = try store.addMarker(MarkerInput(at: 200, label: "plugged in", kind: .manual, detail: "port 3"))
        try store.addMarker(MarkerInput(at: 210, label: "policy reload", kind: .automatic, detail: "generation=2"))
        #expect(m.auditSessionId == a.id)
        let stopped = try store.stopAudit(at: 300)
        #expect(stopped.endedAt == 300 && stopped.id == a.id)
        try store.addMarker(MarkerInput(at: 400, label: "after", kind: .manual))
        let b = try store.startAudit(label: "second", at: 500)
        let markers = try store.markers()
        #expect(markers.map(\.label) == ["before", "plugged in", "policy reload", "after"])
        #expect(markers.map(\.auditSessionId) == [nil, a.id, a.id, nil])
        #expect(markers.map(\.kind) == [.manual, .manual, .automatic, .manual])
        #expect(try store.markers(since: 205).count == 2)
        #expect(try store.markers(auditSessionId: a.id).count == 2)
        #expect(try store.audits().map(\.label) == ["printer test", "second"])
        #expect(try store.audits(since: 350).map(\.id) == [b.id])
        #expect(try store.openAudit() == b)
    }


    @Test func tierOverrides() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        try store.putWindow(SessionWindow(peer: "alice", allowedUntil: 10, reconnectAt: 20))
        #expect(try store.tierOverride(peer: "alice") == nil)
        try store.setTier(peer: "alice", tier: .free, at: 5)
        #expect(try store.window(peer: "alice") != nil)
        try store.setTier(peer: "alice", tier: .premium, at: 6)
        #expect(try store.tierOverride(peer: "alice") == TierOverride(peer: "alice", tier: .premium, changedAt: 6))
        #expect(try store.window(peer: "alice") != nil)  // kept: premium ignores it, free finds its pause again
        try store.setTier(peer: "bob", tier: .free, at: 7)
        #expect(try store.tierOverrides().map(\.peer) == ["alice", "bob"])
        try store.clearTier(peer: "alice")
        #expect(try store.tierOverride(peer: "alice") == nil)
    }

    @Test func emptyStringsAreStoredAsEmptyNotNull() throws {
        let dir = TempDir()
        defer { withExtendedLifetime(dir) {} }
        let store = try StateStore(path: dir.db)
        try store.addMarker(MarkerInput(at: 1, label: "", kind: .manual, detail: ""))
        let m = try #require(try store.markers().first)
        #expect(m.label == "" && m.detail == "")
    }
}
