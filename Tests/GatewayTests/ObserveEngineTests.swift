import Capture
import Foundation
import Gateway
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
    /// An engine with an observer attached before it starts, and a connected client.
    final class Harness: @unchecked Sendable {
        // Safe: used from the test's thread only; the engine has its own threads.
        let tun = ChannelTun()
        let network = ChannelNetwork()
        let gwBind: ChannelBind
        let clientBind: ChannelBind
        let engine: GatewayEngine
        let client: WireGuardDevice
        let gatewayPeer: PeerHandle
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        let batch = PacketBatch(capacity: 16, slotSize: 2048)
        let log = LogCapture()
        let dir: String
        let observer: PacketObserver
        let consumer: RingConsumer

        init() throws {
            dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("tv-observe-engine-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            gwBind = network.bind(address: IPAddress(v4: 0xC000_0201))
            clientBind = network.bind(address: IPAddress(v4: 0xC000_0202))
            let gwDevice = try #require(WireGuardDevice(privateKey: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }))
            client = try #require(WireGuardDevice(privateKey: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) }))
            let set = PolicyParser.parse(EngineTests.rules)
            engine = GatewayEngine(device: gwDevice, tun: tun, bind: gwBind, clock: SystemClock(),
                                   policy: (set, CompiledPolicy(set)), log: log.logger)
            engine.addPeer(name: "alice", publicKey: client.publicKey, presharedKey: nil,
                           allowedIPs: [IPPrefix("10.99.0.2/32")!], endpoint: nil, persistentKeepalive: 0, tier: .free)
            gatewayPeer = client.addPeer(PeerConfiguration(
                publicKey: gwDevice.publicKey,
                endpoint: WireGuard.Endpoint(address: gwBind.endpoint.address, port: gwBind.endpoint.port)))
            let ring = try RingProducer(directory: dir, slotCount: 1024)
            consumer = try RingConsumer(path: ring.path)
            observer = PacketObserver(ring: ring, capture: try CaptureSpooler(directory: dir + "/capture", detail: .full),
                                      flowCapacity: engine.options.flowCapacity)
            for p in engine.peers { observer.setPeerName(p.name, for: p.handle.rawValue) }
            engine.observer = observer
            engine.start()
        }

        deinit {
            engine.stop()
            observer.close()
            buffer.deallocate()
            output.deallocate()
            try? FileManager.default.removeItem(atPath: dir)
        }

        var nowNs: UInt64 { SystemClock().monotonicNanoseconds() }
        var gwEndpoint: WireGuard.Endpoint { WireGuard.Endpoint(address: gwBind.endpoint.address, port: gwBind.endpoint.port) }

        func send(_ bytes: some Collection<UInt8>) throws {
            batch.reset()
            batch.set(0, bytes: bytes, endpoint: gwBind.endpoint)
            batch.count = 1
            #expect(try clientBind.send(batch) == 1)
        }

        func receive(timeout: Int32 = 2000) throws -> [UInt8]? {
            guard try clientBind.waitReadable(timeoutMilliseconds: timeout) == .readable else { return nil }
            return try clientBind.receive(into: batch) > 0 ? batch.bytes(0) : nil
        }

        func handshake() throws {
            let r = client.initiation(for: gatewayPeer, into: buffer, now: nowNs,
                                      wallClock: UInt64(Date().timeIntervalSince1970 * 1e9))
            guard case .send(let range, _) = r else { Issue.record("initiation: \(r)"); return }
            try send(UnsafeRawBufferPointer(rebasing: buffer[range]))
            let response = try #require(try receive())
            response.withUnsafeBytes { buffer.copyMemory(from: $0) }
            _ = client.receive(buffer, length: response.count, from: gwEndpoint, now: nowNs, underLoad: false, output: output)
        }

        func sendPacket(_ packet: [UInt8]) throws {
            packet.withUnsafeBytes { (buffer.baseAddress! + 16).copyMemory(from: $0.baseAddress!, byteCount: packet.count) }
            guard case .send(let range, _) = client.encrypt(peer: gatewayPeer, buffer: buffer, payloadLength: packet.count,
                                                             now: nowNs) else { Issue.record("encrypt"); return }
            try send(UnsafeRawBufferPointer(rebasing: buffer[range]))
        }

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
        let out = EngineTests.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
        let reply = EngineTests.udp(from: "198.19.0.2", 53, to: "10.99.0.2", 40000, payload: Array("answer".utf8))
        h.tun.inject(reply)
        _ = try h.receive()
        let blocked = EngineTests.tcpSYN(from: "10.99.0.2", 40001, to: "198.19.0.2", 7001)
        try h.sendPacket(blocked)

        let records = h.records(packets: 3)
        let packets = records.filter { $0.kind == .packet }
        try #require(packets.count == 3)
        #expect(records.filter { $0.kind == .flowOpen }.count == 2)
        #expect(records.contains { $0.kind == .handshake && $0.peerName.description == "alice" })
        #expect(packets.map(\.direction) == [.fromPeer, .toPeer, .fromPeer])
        #expect(packets.map(\.verdict) == [.allow, .allow, .block])
        #expect(packets.map(\.length) == [UInt32(out.count), UInt32(reply.count), UInt32(blocked.count)])
        #expect(packets.allSatisfy { $0.peerName.description == "alice" && $0.captureOffset != 0 })
        #expect(packets[0].flowID == packets[1].flowID && packets[2].flowID != packets[0].flowID)

        // The capture holds the same three packets at the locations the records name.
        h.engine.observer?.capture?.sync()
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
}
