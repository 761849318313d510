import Core
import Engine
import Foundation
import Packet
import Policy
import Store
import Testing
import TestSupport
import WireGuard

@testable import Daemon

/// `History` against a real store: flow rows opened, updated by the periodic sweep (not per
/// packet), closed (expired, shutdown); blocked flows coalesced into refusal rows; watchdog
/// records become session, window, refusal and marker rows; ids continue above `idBase`.
@Suite struct HistoryTests {
    static func tempStore() -> String {
        let dir = NSTemporaryDirectory() + "tv-history-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + "/state.db"
    }

    static func policy(_ text: String) -> ActivePolicy {
        let set = PolicyParser.parse([PolicySource(name: "p.rules", text: text)])
        let compiled = CompiledPolicy(set)
        _ = compiled
        return ActivePolicy.standalone(set, peers: [(handle: 1, name: "alice", tier: .free)])
    }

    @Test func flowsRefusalsSessionsReachTheStore() throws {
        let path = Self.tempStore()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let clock = ManualClock()
        let writer = try StoreWriter(path: path)
        let h = History(writer: writer, clock: clock, idBase: 100, peers: .names([1: "alice"]), flowUpdateIntervalMs: 5_000)
        let p = Self.policy("default allow\nblock proto tcp port 22 reason \"no ssh\"\n")
        let table = FlowTable(capacity: 16)
        let mono = Int64(clock.boottimeNanoseconds() / 1_000_000)
        let src = IPAddress("10.99.0.2")!, web = IPAddress("203.0.113.7")!, lan = IPAddress("192.168.1.5")!

        // Allowed web flow: opened, then 10 packets; only the sweep writes counters.
        let k = FlowKey.oriented(proto: .tcp, source: src, sourcePort: 40000, destination: web, destinationPort: 443)
        let t = table.track(k.key, reversed: k.reversed, length: 60, now: mono)
        let v = p.compiled.evaluate(PolicyQuery(direction: .out, proto: .tcp, source: src, destination: web, sourcePort: 40000,
                                                destinationPort: 443, peer: p.peerID(1), tier: .free, host: nil, minuteOfWeek: 0))
        h.flowDecided(FlowDecision(entry: table[t.handle], peer: 1, verdict: v, policy: p, opened: true, host: nil))
        for i in 1...10 { _ = table.track(k.key, reversed: k.reversed, length: 100, now: mono + Int64(i)) }
        h.timerTick(flows: table, monoMs: mono + 20)  // first sweep
        // Two blocked ssh attempts with fresh source ports: one coalesced refusal row, count 2.
        for port: UInt16 in [50000, 50001] {
            let b = FlowKey.oriented(proto: .tcp, source: src, sourcePort: port, destination: lan, destinationPort: 22)
            let bt = table.track(b.key, reversed: b.reversed, length: 60, now: mono + 30)
            let bv = p.compiled.evaluate(PolicyQuery(direction: .out, proto: .tcp, source: src, destination: lan, sourcePort: port,
                                                     destinationPort: 22, peer: p.peerID(1), tier: .free, host: nil, minuteOfWeek: 0))
            #expect(bv.action == .block)
            h.flowDecided(FlowDecision(entry: table[bt.handle], peer: 1, verdict: bv, policy: p, opened: true, host: nil))
        }
        // Watchdog records.
        let w0 = clock.wallMilliseconds()
        h.record(.windowPut(peer: "alice", WindowDates(allowedUntil: w0 + 20_000, reconnectAt: w0 + 50_000)))
        h.record(.sessionOpened(peer: "alice", at: w0))
        h.record(.sessionClosed(peer: "alice", at: w0 + 20_000, reason: .freeLimit, rx: 10, tx: 20))
        for i in 0..<5 { h.record(.refused(peer: "alice", windowEnd: w0 + 20_000, at: w0 + 21_000 + Int64(i) * 5_000)) }
        h.record(.marker(at: w0 + 20_000, label: "watchdog: alice session ended (free-limit)", detail: nil))
        // Shutdown closes what is left.
        h.engineStopping(flows: table, monoMs: mono + 40)
        writer.close()

        let s = try StateStore(path: path, mode: .readOnly)
        let flows = try s.flows()
        #expect(flows.count == 3)
        #expect(flows.allSatisfy { $0.id > 100 && $0.closeReason == "shutdown" && $0.peer == "alice" })
        let webRow = try #require(flows.first { $0.dstPort == 443 })
        #expect(webRow.counters.packetsOut == 11 && webRow.counters.bytesOut == 1060)
        #expect(webRow.verdict == .allow && webRow.rule == nil)
        #expect(webRow.firstSeen == w0)
        let blocked = try s.flows(blockedOnly: true)
        #expect(blocked.count == 2 && blocked.allSatisfy { $0.rule == "p.rules:2" })
        let refusals = try s.refusals()
        let flowRefusal = try #require(refusals.first { $0.kind == .flow })
        #expect(flowRefusal.count == 2 && flowRefusal.flowKey == "tcp 192.168.1.5:22" && flowRefusal.reason == "no ssh")
        let sessionRefusal = try #require(refusals.first { $0.kind == .session })
        #expect(sessionRefusal.count == 5 && sessionRefusal.window == w0 + 20_000 && sessionRefusal.lastAt == w0 + 41_000)
        #expect(try s.window(peer: "alice") == SessionWindow(peer: "alice", allowedUntil: w0 + 20_000, reconnectAt: w0 + 50_000))
        let sessions = try s.sessions(peer: "alice")
        #expect(sessions.count == 1 && sessions[0].endReason == .freeLimit && sessions[0].rxBytes == 10)
        #expect(try s.connection.scalarInt("SELECT count(*) FROM markers WHERE kind = 'automatic'") == 1)
        #expect(h.droppedRecords == 0)
    }

    @Test func sweepWritesOnlyChangedFlowsAndRespectsTheInterval() throws {
        let path = Self.tempStore()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let clock = ManualClock()
        let writer = try StoreWriter(path: path, options: .init(capacity: 8))
        let h = History(writer: writer, clock: clock, idBase: 0, peers: PeerRegistry())
        let table = FlowTable(capacity: 64)
        for i in 0..<20 {
            let k = FlowKey.oriented(proto: .udp, source: IPAddress("10.99.0.2")!, sourcePort: UInt16(1000 + i),
                                     destination: IPAddress("10.0.0.1")!, destinationPort: 53)
            _ = table.track(k.key, reversed: k.reversed, length: 60, now: 10)
        }
        // A queue of 8 records: the 20 updates of the first sweep overflow it; drops are counted.
        writer.flush()
        h.timerTick(flows: table, monoMs: 20)
        #expect(h.droppedRecords > 0)
        let dropped = h.droppedRecords
        // Within the interval, and with nothing changed after it, the sweep submits nothing.
        h.timerTick(flows: table, monoMs: 1_000)
        writer.flush()
        h.timerTick(flows: table, monoMs: 6_000)
        #expect(h.droppedRecords == dropped)
        writer.close()
    }

    @Test func withoutAStoreRecordsAreCountedAsDropped() {
        let h = History(writer: nil, clock: ManualClock(), idBase: 0, peers: PeerRegistry())
        h.record(.sessionOpened(peer: "x", at: 1))
        h.heartbeat(now: 2)
        #expect(h.droppedRecords == 2)
    }
}

import ControlProtocol

/// The `liveFlows` control request/reply that `tunnelctl explain 'FLOW'` asks the daemon.
@Suite struct HistoryLiveFlowsWireTests {
    @Test(arguments: [ControlRequest.liveFlows(peer: nil), .liveFlows(peer: "alice")])
    func requestRoundTrips(_ r: ControlRequest) throws {
        let bytes = ControlWire.encode(r)
        #expect(try ControlWire.decodeRequest(Array(bytes.dropLast(bytes.last == 10 ? 1 : 0))).get() == r)
    }

    @Test func replyRoundTrips() throws {
        let f = LiveFlow(id: 7, peer: "alice", proto: 6, src: "10.99.0.2", srcPort: 40000, dst: "192.168.1.5", dstPort: 22,
                         verdict: "block", firstSeenMs: 1, lastSeenMs: 2, bytesOut: 60, bytesIn: 0, packetsOut: 1, packetsIn: 0)
        for r in [ControlResponse.liveFlows([]), .liveFlows([f])] {
            let bytes = ControlWire.encode(r)
            #expect(try ControlWire.decodeResponse(Array(bytes.dropLast(bytes.last == 10 ? 1 : 0))).get() == r)
        }
    }
}
