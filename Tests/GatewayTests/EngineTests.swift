import Core
import Foundation
import Gateway
import Packet
import Policy
import Runtime
import Synchronization
import Testing
import TestSupport
import WireGuard

/// The whole engine over in-memory fakes: a `ChannelTun` for the kernel side, a `ChannelBind` pair
/// for UDP, and a client `WireGuardDevice` driven by the test (no root, no sockets).
@Suite(.serialized) struct EngineTests {
    static let rules = """
        default allow
        default in block
        block proto tcp port 7001 reason "blocked"
        reject proto tcp,udp port 7002 reason "rejected"
        """

    /// A running engine and a connected client.
    final class Harness: @unchecked Sendable {
        // Safe: used from the test's thread only; the engine has its own threads.
        let tun = ChannelTun()
        let network = ChannelNetwork()
        let gwBind: ChannelBind
        var clientBind: ChannelBind
        let engine: GatewayEngine
        let client: WireGuardDevice
        let gatewayPeer: PeerHandle
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        let batch = PacketBatch(capacity: 16, slotSize: 2048)
        let log = LogCapture()

        /// `beforeStart` runs after the peers are added and before the engine's threads start
        /// (e.g. to attach an observer).
        init(rules: String = EngineTests.rules, beforeStart: (GatewayEngine) throws -> Void = { _ in }) throws {
            gwBind = network.bind(address: IPAddress(v4: 0xC000_0201))
            clientBind = network.bind(address: IPAddress(v4: 0xC000_0202))
            let gwKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            let clientKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) }
            let gwDevice = try #require(WireGuardDevice(privateKey: gwKey))
            client = try #require(WireGuardDevice(privateKey: clientKey))
            let set = PolicyParser.parse(rules)
            #expect(!set.hasErrors)
            engine = GatewayEngine(device: gwDevice, tun: tun, bind: gwBind, clock: SystemClock(),
                                   policy: (set, CompiledPolicy(set)), log: log.logger)
            engine.addPeer(name: "alice", publicKey: client.publicKey, presharedKey: nil,
                           allowedIPs: [IPPrefix("10.99.0.2/32")!, IPPrefix("fd99::2/128")!], endpoint: nil,
                           persistentKeepalive: 0, tier: .free)
            gatewayPeer = client.addPeer(PeerConfiguration(
                publicKey: gwDevice.publicKey,
                endpoint: gwBind.endpoint))
            try beforeStart(engine)
            engine.start()
        }

        deinit {
            engine.stop()
            buffer.deallocate()
            output.deallocate()
        }

        var nowNs: UInt64 { SystemClock().boottimeNanoseconds() }

        /// Sends `bytes` to the gateway from the client's bind.
        func sendToGateway(_ bytes: some Collection<UInt8>) throws {
            batch.reset()
            batch.set(0, bytes: bytes, endpoint: gwBind.endpoint)
            batch.count = 1
            #expect(try clientBind.send(batch) == 1)
        }

        /// The next datagram the gateway sent to the client, or nil after `timeout` ms.
        func receiveFromGateway(timeout: Int32 = 2000) throws -> [UInt8]? {
            guard try clientBind.waitReadable(timeoutMilliseconds: timeout) == .readable else { return nil }
            let n = try clientBind.receive(into: batch)
            return n > 0 ? batch.bytes(0) : nil
        }

        /// Completes a handshake initiated by the client.
        func handshake() throws {
            let r = client.initiation(for: gatewayPeer, into: buffer, now: nowNs,
                                      wallClock: UInt64(Date().timeIntervalSince1970 * 1e9))
            guard case .send(let range, _) = r else { Issue.record("initiation: \(r)"); return }
            try sendToGateway(UnsafeRawBufferPointer(rebasing: buffer[range]))
            let response = try #require(try receiveFromGateway())
            response.withUnsafeBytes { buffer.copyMemory(from: $0) }
            let result = client.receive(buffer, length: response.count, from: gwBind.endpoint,
                                        now: nowNs, underLoad: false, output: output)
            #expect(result == .handshakeComplete(peer: gatewayPeer))
        }

        /// Encrypts an IP packet for the gateway and sends it.
        func sendPacket(_ packet: [UInt8]) throws {
            packet.withUnsafeBytes { (buffer.baseAddress! + 16).copyMemory(from: $0.baseAddress!, byteCount: packet.count) }
            let r = client.encrypt(peer: gatewayPeer, buffer: buffer, payloadLength: packet.count, now: nowNs)
            guard case .send(let range, _) = r else { Issue.record("encrypt: \(r)"); return }
            try sendToGateway(UnsafeRawBufferPointer(rebasing: buffer[range]))
        }

        /// Receives and decrypts the next data packet from the gateway (skipping keepalives).
        func receivePacket(timeout: Int32 = 2000) throws -> [UInt8]? {
            while let datagram = try receiveFromGateway(timeout: timeout) {
                datagram.withUnsafeBytes { buffer.copyMemory(from: $0) }
                let r = client.receive(buffer, length: datagram.count,
                                       from: gwBind.endpoint,
                                       now: nowNs, underLoad: false, output: output)
                switch r {
                case .data(_, let range, _): return Array(UnsafeRawBufferPointer(rebasing: buffer[range]))
                case .keepalive: continue
                default: Issue.record("unexpected \(r)"); return nil
                }
            }
            return nil
        }
    }

    // MARK: packet builders (checksums are not checked by the gateway's parser; lengths are)

    static func ipv4(_ proto: UInt8, from src: String, to dst: String, _ transport: [UInt8]) -> [UInt8] {
        let s = IPAddress(src)!.v4, d = IPAddress(dst)!.v4
        let total = 20 + transport.count
        var p: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 1, 0x40, 0, 64, proto, 0, 0]
        for v in [s, d] { p += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        return p + transport
    }

    static func udp(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16, payload: [UInt8] = Array("hi".utf8)) -> [UInt8] {
        let len = 8 + payload.count
        return ipv4(17, from: src, to: dst, [UInt8(sport >> 8), UInt8(sport & 0xff), UInt8(dport >> 8), UInt8(dport & 0xff),
                                             UInt8(len >> 8), UInt8(len & 0xff), 0, 0] + payload)
    }

    static func tcpSYN(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16) -> [UInt8] {
        ipv4(6, from: src, to: dst, [UInt8(sport >> 8), UInt8(sport & 0xff), UInt8(dport >> 8), UInt8(dport & 0xff),
                                     0, 0, 0x10, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0])
    }

    // MARK: tests

    /// The flow table is keyed by addresses peers choose, so each engine seeds its bucket hash
    /// at random (FlowKey.hash64(seed:)); an explicit seed is passed through unchanged.
    @Test func flowTableHashSeedIsRandomPerEngineUnlessGiven() throws {
        let network = ChannelNetwork()
        let set = PolicyParser.parse("default allow\n")
        func engine(_ options: GatewayOptions = GatewayOptions()) throws -> GatewayEngine {
            let device = try #require(WireGuardDevice(privateKey: [UInt8](repeating: 5, count: 32)))
            return GatewayEngine(device: device, tun: ChannelTun(), bind: network.bind(address: IPAddress(v4: 0xC000_0209)),
                                 clock: SystemClock(), policy: (set, CompiledPolicy(set)), options: options,
                                 log: LogCapture().logger)
        }
        let seeds = try (0..<4).map { _ in try engine().flowHashSeed }
        #expect(Set(seeds).count == seeds.count)
        #expect(!seeds.contains(0))
        var fixed = GatewayOptions()
        fixed.flowHashSeed = 0x5EED_0000_1234
        #expect(try engine(fixed).flowHashSeed == 0x5EED_0000_1234)
    }

    /// A reload (or start) that leaves nothing to enforce is accepted with a warning, in the
    /// reply and in the daemon's log.
    @Test func emptyPolicyDirectoryLoadsWithAWarningInTheLog() throws {
        let dir = NSTemporaryDirectory() + "tv-empty-policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let warning = "no *.rules files; every flow gets the built-in default (allow outbound, block inbound)"
        guard case .success(let loaded) = ActivePolicy.load(directory: dir) else { Issue.record("load failed"); return }
        #expect(loaded.0.warnings.map(\.description) == ["\(dir): warning: \(warning)"])

        let log = LogCapture()
        let set = PolicyParser.parse("default allow\n")
        let engine = GatewayEngine(device: try #require(WireGuardDevice(privateKey: [UInt8](repeating: 5, count: 32))),
                                   tun: ChannelTun(), bind: ChannelNetwork().bind(address: IPAddress(v4: 0xC000_0209)),
                                   clock: SystemClock(), policy: (set, CompiledPolicy(set)), log: log.logger)
        let reply = engine.reloadPolicy(directory: dir)
        #expect(reply.succeeded && reply.policy.ruleCount == 0)
        #expect(reply.warnings.map(\.description) == ["\(dir): \(warning)"])
        #expect(log.all.contains("<4>policy: \(dir): warning: \(warning)"), "\(log.all)")
    }

    @Test func allowedTrafficPassesBothWays() throws {
        let h = try Harness()
        try h.handshake()
        let out = Self.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
        // The reply of that flow, read from the kernel side, reaches the client encrypted.
        let reply = Self.udp(from: "198.19.0.2", 53, to: "10.99.0.2", 40000, payload: Array("answer".utf8))
        h.tun.inject(reply)
        #expect(try h.receivePacket() == reply)
        #expect(h.engine.flowCount == 1)
    }

    @Test func inboundFlowsFollowTheInboundDefault() throws {
        let h = try Harness()
        try h.handshake()
        // A flow started from outside towards the peer: `default in block`.
        h.tun.inject(Self.udp(from: "198.19.0.2", 5000, to: "10.99.0.2", 6000))
        #expect(try h.receivePacket(timeout: 300) == nil)
        #expect(h.engine.counters.count(.policyBlock) == 1)
    }

    @Test func spoofedInnerSourceIsDroppedAndCounted() throws {
        let h = try Harness()
        try h.handshake()
        try h.sendPacket(Self.udp(from: "10.99.0.77", 40000, to: "198.19.0.2", 53))
        let good = Self.udp(from: "10.99.0.2", 40001, to: "198.19.0.2", 53)
        try h.sendPacket(good)
        #expect(h.tun.waitWritten(count: 1) == [good])
        #expect(h.engine.counters.count(.spoofedSource) == 1)
    }

    @Test func blockDropsAndRejectAnswersWithReset() throws {
        let h = try Harness()
        try h.handshake()
        try h.sendPacket(Self.tcpSYN(from: "10.99.0.2", 40000, to: "198.19.0.2", 7001))
        try h.sendPacket(Self.tcpSYN(from: "10.99.0.2", 40001, to: "198.19.0.2", 7002))
        let rst = try #require(try h.receivePacket())
        let parsed = try rst.withUnsafeBytes { try PacketParser.parse($0) }
        #expect(parsed.proto == .tcp && parsed.tcpFlags.contains(.rst))
        #expect(parsed.source == IPAddress("198.19.0.2") && parsed.destination == IPAddress("10.99.0.2"))
        #expect(parsed.sourcePort == 7002 && parsed.destinationPort == 40001)
        #expect(h.tun.takeWritten().isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 1)
        #expect(h.engine.counters.count(.policyReject) == 1)
        let show = h.engine.policyShowReply()
        #expect(show.rules.map(\.hits).prefix(2) == [1, 1])
    }

    @Test func udpRejectAnswersWithPortUnreachable() throws {
        let h = try Harness()
        try h.handshake()
        try h.sendPacket(Self.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 7002))
        let icmp = try #require(try h.receivePacket())
        let parsed = try icmp.withUnsafeBytes { try PacketParser.parse($0) }
        #expect(parsed.proto == .icmp && parsed.icmpType == 3 && parsed.icmpCode == 3)
    }

    @Test func reloadCutsAnOpenFlowOnItsNextPacket() throws {
        let h = try Harness()
        try h.handshake()
        let first = Self.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 9000)
        try h.sendPacket(first)
        #expect(h.tun.waitWritten(count: 1) == [first])
        let generation = h.engine.policy.generation
        let set = PolicyParser.parse(Self.rules + "\nblock proto udp port 9000\n")
        #expect(h.engine.install(policy: (set, CompiledPolicy(set))) == generation + 1)
        try h.sendPacket(first)
        let later = Self.udp(from: "10.99.0.2", 40001, to: "198.19.0.2", 9001)
        try h.sendPacket(later)
        #expect(h.tun.waitWritten(count: 1) == [later])
        #expect(h.engine.counters.count(.policyBlock) == 1)
    }

    @Test func packetsWaitForTheHandshakeTheGatewayStarts() throws {
        let h = try Harness()
        try h.handshake()
        let out = Self.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
        // The session ends; a reply of the open flow arrives from the kernel side.
        h.engine.kick(try #require(h.engine.peer(named: "alice")).handle)
        let reply = Self.udp(from: "198.19.0.2", 53, to: "10.99.0.2", 40000, payload: Array("late".utf8))
        h.tun.inject(reply)
        // The gateway queues it and initiates a handshake to the endpoint it learnt.
        let initiation = try #require(try h.receiveFromGateway())
        #expect(initiation.first == 1 && initiation.count == 148)
        initiation.withUnsafeBytes { h.buffer.copyMemory(from: $0) }
        let from = h.gwBind.endpoint
        let r = h.client.receive(h.buffer, length: initiation.count, from: from, now: h.nowNs, underLoad: false, output: h.output)
        guard case .sendResponse(_, let range) = r else { Issue.record("client: \(r)"); return }
        try h.sendToGateway(UnsafeRawBufferPointer(rebasing: h.output[range]))
        // Handshake complete: the queued packet follows.
        #expect(try h.receivePacket() == reply)
    }

    @Test func repliesFollowThePeerWhenItRoams() throws {
        let h = try Harness()
        try h.handshake()
        let out = Self.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
        // The client moves to another address and port (e.g. Wi-Fi to mobile) and keeps sending.
        h.clientBind = h.network.bind(address: IPAddress(v4: 0xC000_0263), port: 51999)
        try h.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
        let reply = Self.udp(from: "198.19.0.2", 53, to: "10.99.0.2", 40000)
        h.tun.inject(reply)
        #expect(try h.receivePacket() == reply)
        let status = try #require(h.engine.peerStatuses().first)
        #expect(status.endpoint == "192.0.2.99:51999")
    }

    @Test func kickDropsTheSession() throws {
        let h = try Harness()
        try h.handshake()
        let peer = try #require(h.engine.peer(named: "alice"))
        h.engine.kick(peer.handle)
        try h.sendPacket(Self.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.device.dropCount(.unknownReceiverIndex) == 1)
    }
}
