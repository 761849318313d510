import Core
import Engine
import Capture
import Foundation
import Packet
import Policy
import Store
import Testing
import TestSupport

@testable import Daemon

/// A flow that opened before `capture on`: its later packets are captured, the capture index and
/// the flow's store row get the location of its first *captured* packet (by the sweep, or when
/// it ends before one), and extraction by the row's key and location finds them.
@Suite struct CaptureHistoryTests {
    /// Observer, history and flow table wired as `tunneld` wires them.
    final class Rig {
        let dir: ObserveTests.Directory
        let storePath: String
        let writer: StoreWriter
        let history: History
        let observer: PacketObserver
        let capture: CaptureSpooler
        let table = FlowTable(capacity: 64)
        let policy = HistoryTests.policy("default allow\n")
        let clock = ManualClock()

        init() throws {
            dir = try ObserveTests.Directory("late")
            storePath = dir.path + "/state.db"
            writer = try StoreWriter(path: storePath)
            history = History(writer: writer, clock: clock, idBase: 0, peers: PeerRegistry())
            capture = try CaptureSpooler(directory: dir.path + "/capture", detail: .full, enabled: false)
            observer = PacketObserver(ring: nil, capture: capture, flowCapacity: 64, peers: PeerRegistry())
            let observer = observer
            history.captureLocation.withLock { lookup in
                lookup = { id in
                    observer.firstCaptureLocation(flowID: id)
                }
            }
        }

        var mono: Int64 { Int64(clock.monotonicNanoseconds() / 1_000_000) }

        /// What `decide` does for one packet: track, observe, and record a new flow in history.
        @discardableResult
        func packet(_ bytes: [UInt8], fromPeer: Bool) throws -> UInt64 {
            try bytes.withUnsafeBytes { raw in
                let p = try PacketParser.parse(raw)
                let (key, reversed) = p.flowKey
                let t = table.track(key, reversed: reversed, length: raw.count, tcpFlags: p.tcpFlags, now: mono)
                let verdict = policy.compiled.evaluate(PolicyQuery(
                    direction: .out, proto: p.proto, source: p.source, destination: p.destination, sourcePort: p.sourcePort,
                    destinationPort: p.destinationPort, peer: policy.peerID(1), tier: .free, host: nil, minuteOfWeek: 0))
                table.setVerdict(t.handle, generation: 1, action: verdict.action.rawValue, ruleIndex: verdict.ruleIndex)
                observer.packet(ObservedBytes(raw), p, handle: t.handle, entry: table[t.handle], opened: t.opened,
                                action: verdict.action, peer: 1, fromPeer: fromPeer)
                history.flowDecided(FlowDecision(entry: table[t.handle], peer: 1, verdict: verdict, policy: policy, opened: t.opened, host: nil))
                return table[t.handle].id
            }
        }

        func row(_ id: UInt64) throws -> Flow? {
            writer.flush()
            return try StateStore(path: storePath, mode: .readOnly).flow(id: Int64(id))
        }

        /// Packets of flow row `id` found by extraction from the row's own key and location.
        func extracted(_ id: UInt64) throws -> Int {
            let f = try #require(try row(id))
            let at = try #require(f.capture)
            capture.sync()
            let key = CaptureFlowKey(proto: f.proto, originator: f.src, originatorPort: f.srcPort, responder: f.dst,
                                     responderPort: f.dstPort)
            let from = CaptureLocation(fileSequence: UInt32(at.fileSequence), offset: UInt64(at.offset))
            let files = try CaptureFiles.list(directory: capture.directory)
            return try CaptureReader.extract(files: files, selection: .flow(key, from: from, until: nil),
                                             outputPath: dir.path + "/flow-\(id).pcap").packets
        }
    }

    @Test func flowOpenedBeforeCaptureOnGetsItsFirstCapturedLocation() throws {
        let r = try Rig()
        let c = ObserveTests.client, s = ObserveTests.server
        // Capture off: a TCP flow (A) and a UDP flow (B) open; neither row has a location.
        r.observer.beginBatch()
        let a = try r.packet(ObserveTests.ipv4(6, c, 41_000, s, 443, payload: 0, flags: 0x02), fromPeer: true)
        let b = try r.packet(ObserveTests.ipv4(17, c, 40_000, s, 53, payload: 20), fromPeer: true)
        #expect(try r.row(a)?.capture == nil && r.row(b)?.capture == nil)

        // capture on: later packets of both are captured.
        r.observer.requestCapture(CaptureSettingsChange(enabled: true, detail: .full))
        r.observer.tick()
        r.observer.beginBatch()
        try r.packet(ObserveTests.ipv4(6, s, 443, c, 41_000, payload: 0, flags: 0x12), fromPeer: false)
        try r.packet(ObserveTests.ipv4(6, c, 41_000, s, 443, payload: 100), fromPeer: true)
        try r.packet(ObserveTests.ipv4(17, c, 40_000, s, 53, payload: 30), fromPeer: true)
        let firstA = try #require(r.observer.firstCaptureLocation(flowID: a))
        let firstB = try #require(r.observer.firstCaptureLocation(flowID: b))
        r.observer.flowIndex?.flush()

        // The index lists both with their first captured packet.
        let index = CaptureFlowIndex.read(directory: r.capture.directory, sequence: firstA.fileSequence)
        #expect(index.map(\.flowID) == [a, b] && index.map(\.location) == [firstA, firstB])

        // The sweep gives A's row its location (and B's, but B ends first below).
        r.history.timerTick(flows: r.table, monoMs: r.mono)
        let rowA = try #require(try r.row(a))
        #expect(rowA.capture == firstA)
        #expect(try r.extracted(a) == 2)

        // A later location (capture off and on again) never replaces the first.
        r.observer.requestCapture(CaptureSettingsChange(enabled: false, detail: .full))
        r.observer.tick()
        r.observer.requestCapture(CaptureSettingsChange(enabled: true, detail: .full))
        r.observer.tick()
        r.clock.advance(by: .milliseconds(1))
        r.observer.beginBatch()
        try r.packet(ObserveTests.ipv4(6, c, 41_000, s, 443, payload: 10), fromPeer: true)
        #expect(r.observer.firstCaptureLocation(flowID: a) != firstA)
        r.clock.advance(by: .seconds(10))
        r.history.timerTick(flows: r.table, monoMs: r.mono)
        #expect(try r.row(a)?.capture == rowA.capture)
        #expect(try r.extracted(a) == 3)

        // A flow that ends before a sweep wrote its location: the close carries it.
        let c2 = try Rig()
        c2.observer.beginBatch()
        let d = try c2.packet(ObserveTests.ipv4(17, c, 40_001, s, 53, payload: 20), fromPeer: true)
        c2.observer.requestCapture(CaptureSettingsChange(enabled: true, detail: .full))
        c2.observer.tick()
        c2.observer.beginBatch()
        try c2.packet(ObserveTests.ipv4(17, s, 53, c, 40_001, payload: 40), fromPeer: false)
        c2.table.expire(now: c2.mono + 10_000_000, budget: 64) { ended in
            c2.history.flowEnded(ended)  // before the observer, as the engine's expiry sweep does
            c2.observer.flowEnded(ended)
        }
        c2.observer.tick()
        #expect(try c2.row(d)?.closedAt != nil)
        #expect(try c2.extracted(d) == 1)
        r.writer.close()
        c2.writer.close()
    }
}
