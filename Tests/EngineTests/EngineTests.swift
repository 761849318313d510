import Core
import Foundation
import Engine
import Packet
import Policy
import Runtime
import SystemIO
import Synchronization
import Testing
import TestSupport
import WireGuard

/// The whole engine over in-memory fakes: a `ChannelTun` for the kernel side, a `ChannelBind` pair
/// for UDP, and a client `WireGuardDevice` driven by the test (no root, no sockets).
@Suite(.serialized) struct EngineTests {
    typealias Harness = EngineHarness
    static let rules = EngineHarness.rules
    static func udp(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16,
                    payload: [UInt8] = Array("hi".utf8)) -> [UInt8] {
        TestPackets.udp(from: src, sport, to: dst, dport, payload: payload)
    }
    static func tcpSYN(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16) -> [UInt8] {
        TestPackets.tcpSYN(from: src, sport, to: dst, dport)
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
        #expect(h.engine.policy.hits(rule: 0) == 1 && h.engine.policy.hits(rule: 1) == 1)
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
        let peer = try #require(h.engine.peer(named: "alice"))
        #expect(h.engine.device.status(of: peer.handle)?.endpoint?.description == "192.0.2.99:51999")
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
