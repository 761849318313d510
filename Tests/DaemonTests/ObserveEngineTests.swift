import Core
import Runtime
import Engine
import SystemIO
import Capture
import ControlProtocol
import Foundation
@testable import Daemon
import LiveFeed
import Packet
import Policy
import Testing
import TestSupport
import WireGuard

/// The observer wired into the whole engine (in-memory fakes, as `EngineTests`): a watcher sees
/// every decided packet with its verdict, peer name and capture location, in both directions, and
/// the capture holds exactly those packets.
@Suite(.serialized) struct ObserveEngineTests {
    /// `EngineHarness` with an observer attached before the engine starts, and a ring consumer.
    final class Harness: @unchecked Sendable {
        // Safe: used from the test's thread only; the engine has its own threads.
        let base: EngineHarness
        let dir: String
        let observer: PacketObserver
        let consumer: RingConsumer
        var engine: GatewayEngine { base.engine }
        var tun: ChannelTun { base.tun }

        init(captureEnabled: Bool = true) throws {
            let dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("tv-observe-engine-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let ring = try RingProducer(directory: dir, slotCount: 1024)
            let consumer = try RingConsumer(path: ring.path)
            var made: PacketObserver?
            base = try EngineHarness { engine in
                let observer = PacketObserver(ring: ring, capture: try CaptureSpooler(directory: dir + "/capture", detail: .full,
                                                                                 enabled: captureEnabled),
                                              flowCapacity: engine.options.flowCapacity, peers: engine.registry)
                engine.observer = observer
                made = observer
            }
            self.dir = dir
            self.consumer = consumer
            observer = try #require(made)
        }

        deinit {
            base.engine.stop()
            observer.close()
            try? FileManager.default.removeItem(atPath: dir)
        }

        func handshake() throws { try base.handshake() }
        func sendPacket(_ packet: [UInt8]) throws { try base.sendPacket(packet) }
        func receive() throws -> [UInt8]? { try base.receivePacket() }

        /// Ring records until `count` packet records arrived (or 2 s passed).
        func records(packets count: Int) -> [LiveRecord] {
            var out: [LiveRecord] = []
            let deadline = Date().addingTimeInterval(2)
            while out.filter({ $0.kind == .packet }).count < count && Date() < deadline {
                _ = consumer.wait(timeoutNanoseconds: 50_000_000)
                out += consumer.read()
            }
            return out
        }
    }

    @Test func watcherSeesDecidedPacketsBothWaysAndCaptureHoldsThem() throws {
        let h = try Harness()
        try h.handshake()
        let out = TestPackets.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
        let reply = TestPackets.udp(from: "198.19.0.2", 53, to: "10.99.0.2", 40000, payload: Array("answer".utf8))
        h.tun.inject(reply)
        _ = try h.receive()
        let blocked = TestPackets.tcpSYN(from: "10.99.0.2", 40001, to: "198.19.0.2", 7001)
        try h.sendPacket(blocked)

        let records = h.records(packets: 3)
        let packets = records.filter { $0.kind == .packet }
        try #require(packets.count == 3)
        #expect(records.filter { $0.kind == .flowOpen }.count == 2)
        #expect(records.contains { $0.kind == .handshake && $0.peerName.description == "alice" })
        #expect(packets.map(\.direction) == [.out, .in, .out])
        #expect(packets.map(\.verdict) == [.allow, .allow, .block])
        #expect(packets.map(\.length) == [UInt32(out.count), UInt32(reply.count), UInt32(blocked.count)])
        #expect(packets.allSatisfy { $0.peerName.description == "alice" && $0.captureOffset != 0 })
        #expect(packets[0].flowID == packets[1].flowID && packets[2].flowID != packets[0].flowID)

        // The capture holds the same three packets at the locations the records name.
        h.observer.capture?.sync()
        let files = try CaptureFiles.list(directory: h.dir + "/capture")
        var stored: [CaptureLocation: [UInt8]] = [:]
        for f in files {
            try CaptureReader.forEachPacket(in: f) { location, _, _, bytes in stored[location] = Array(bytes) }
        }
        #expect(stored.count == 3)
        for (r, bytes) in zip(packets, [out, reply, blocked]) {
            #expect(stored[CaptureLocation(fileSequence: r.captureFileSequence, offset: r.captureOffset)] == bytes)
        }
        #expect(h.observer.firstCaptureLocation(flowID: packets[0].flowID)?.offset == packets[0].captureOffset)
    }

    /// `tunnelctl capture on|off` through the control request: the reply comes once the data
    /// path runs with the settings (the next packet is captured, or not) — well inside one poll
    /// interval of the settings poller, which stays the fallback.
    @Test func captureRequestTakesEffectBeforeItsReply() throws {
        let h = try Harness(captureEnabled: false)
        try h.handshake()
        let poller = CaptureSettingsPoller(storePath: h.dir + "/no-store.db", observer: h.observer,
                                           intervalMilliseconds: 60_000, log: LogCapture().logger)
        defer { poller.stop() }
        let observe = Observe(observer: h.observer, poller: poller)

        let start = Date()
        let on = observe.capture(enabled: true, detail: "metadata")
        #expect(on == .capture(CaptureReply(enabled: true, detail: "metadata", directory: h.dir + "/capture")))
        #expect(Date().timeIntervalSince(start) < 1.0)
        let first = TestPackets.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.sendPacket(first)
        _ = h.tun.waitWritten(count: 1)
        let captured = h.records(packets: 1).filter { $0.kind == .packet }
        #expect(captured.count == 1 && captured.allSatisfy { $0.captureOffset != 0 })

        let off = observe.capture(enabled: false, detail: "metadata")
        #expect(off == .capture(CaptureReply(enabled: false, detail: "metadata", directory: h.dir + "/capture")))
        try h.sendPacket(first)
        _ = h.tun.waitWritten(count: 1)
        let after = h.records(packets: 1).filter { $0.kind == .packet }
        #expect(after.count == 1 && after.allSatisfy { $0.captureOffset == 0 })

        #expect(observe.capture(enabled: true, detail: "bogus") == .failure(.malformedRequest, "capture detail must be metadata or full, not 'bogus'"))
    }
}
