import Core
import Engine
import Packet
import Policy
import Runtime
import SystemIO
import WireGuard

/// What went wrong in a harness step (a test reports it as a thrown error).
public struct HarnessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A WireGuard client on a ``ChannelNetwork``, driven by the test: its own device and bind, with
/// the gateway as its one peer.
public final class EngineClient: @unchecked Sendable {
    // Safe: used from the test's thread only.
    public let device: WireGuardDevice
    /// The client's bind (replace it to roam).
    public var bind: ChannelBind
    /// The gateway, as the client's peer.
    public let gatewayPeer: PeerHandle
    /// Where the gateway listens.
    public let gatewayEndpoint: Endpoint
    public let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    public let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    public let batch = PacketBatch(capacity: 16, slotSize: 2048)

    /// A client with `privateKey` at `address` that talks to the gateway with `gatewayKey` at `gateway`.
    public init(privateKey: [UInt8], bind: ChannelBind, gatewayKey: WireGuard.PublicKey, gateway: Endpoint) throws {
        guard let device = WireGuardDevice(privateKey: privateKey) else { throw HarnessError("bad client key") }
        self.device = device
        self.bind = bind
        gatewayEndpoint = gateway
        gatewayPeer = device.addPeer(PeerConfiguration(publicKey: gatewayKey, endpoint: gateway))
    }

    deinit {
        buffer.deallocate()
        output.deallocate()
    }

    /// The client's public key (what the gateway knows it by).
    public var publicKey: WireGuard.PublicKey { device.publicKey }

    var nowNs: UInt64 { SystemClock().monotonicNanoseconds() }

    /// Sends `bytes` to the gateway from the client's bind.
    public func sendToGateway(_ bytes: some Collection<UInt8>) throws {
        batch.reset()
        batch.set(0, bytes: bytes, endpoint: gatewayEndpoint)
        batch.count = 1
        guard try bind.send(batch) == 1 else { throw HarnessError("datagram to the gateway not sent") }
    }

    /// The next datagram the gateway sent to the client, or nil after `timeout` ms.
    public func receiveFromGateway(timeout: Int32 = 2000) throws -> [UInt8]? {
        guard try bind.waitReadable(timeoutMilliseconds: timeout) == .readable else { return nil }
        let n = try bind.receive(into: batch)
        return n > 0 ? batch.bytes(0) : nil
    }

    /// Sends a handshake initiation to the gateway (the gateway's answer is left waiting).
    public func sendInitiation() throws {
        let r = device.initiation(for: gatewayPeer, into: buffer, now: nowNs,
                                  wallClock: UInt64(max(0, SystemClock().wallNanoseconds())))
        guard case .send(let range, _) = r else { throw HarnessError("initiation: \(r)") }
        try sendToGateway(UnsafeRawBufferPointer(rebasing: buffer[range]))
    }

    /// Hands a datagram from the gateway to the client's device.
    public func receive(_ datagram: [UInt8]) -> ReceiveResult {
        datagram.withUnsafeBytes { buffer.copyMemory(from: $0) }
        return device.receive(buffer, length: datagram.count, from: gatewayEndpoint, now: nowNs, underLoad: false,
                              output: output)
    }

    /// Completes a handshake initiated by the client.
    public func handshake() throws {
        try sendInitiation()
        guard let response = try receiveFromGateway() else { throw HarnessError("no handshake response") }
        let result = receive(response)
        guard result == .handshakeComplete(peer: gatewayPeer) else { throw HarnessError("handshake: \(result)") }
    }

    /// Encrypts an IP packet for the gateway and sends it.
    public func sendPacket(_ packet: [UInt8]) throws {
        packet.withUnsafeBytes { (buffer.baseAddress! + 16).copyMemory(from: $0.baseAddress!, byteCount: packet.count) }
        let r = device.encrypt(peer: gatewayPeer, buffer: buffer, payloadLength: packet.count, now: nowNs)
        guard case .send(let range, _) = r else { throw HarnessError("encrypt: \(r)") }
        try sendToGateway(UnsafeRawBufferPointer(rebasing: buffer[range]))
    }

    /// Receives and decrypts the next data packet from the gateway (skipping keepalives).
    public func receivePacket(timeout: Int32 = 2000) throws -> [UInt8]? {
        while let datagram = try receiveFromGateway(timeout: timeout) {
            switch receive(datagram) {
            case .data(_, let range, _): return Array(UnsafeRawBufferPointer(rebasing: buffer[range]))
            case .keepalive: continue
            case let r: throw HarnessError("unexpected \(r)")
            }
        }
        return nil
    }
}

/// The whole engine over in-memory fakes: a ``ChannelTun`` for the kernel side, a
/// ``ChannelNetwork`` for UDP, and a client (`alice`, 10.99.0.2, fd99::2) driven by the test (no
/// root, no sockets). The engine runs until the harness goes.
public final class EngineHarness: @unchecked Sendable {
    // Safe: used from the test's thread only; the engine has its own threads.
    /// The rules the harness starts with unless told otherwise.
    public static let rules = """
        default allow
        default in block
        block proto tcp port 7001 reason "blocked"
        reject proto tcp,udp port 7002 reason "rejected"
        """
    public static let gatewayKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
    public static let clientKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) }

    public let tun = ChannelTun()
    public let network = ChannelNetwork()
    public let gwBind: ChannelBind
    public let engine: GatewayEngine
    /// The configured peer `alice`'s client.
    public let alice: EngineClient
    public let log = LogCapture()

    /// `beforeStart` runs after `alice` is added and before the engine's threads start (e.g. to
    /// attach an observer or a watchdog). `options` and `clock` go to the engine;
    /// `gatewayQueueLimit` is how many datagrams the gateway's bind holds unread (floods).
    public init(rules: String = EngineHarness.rules, aliceTier: PeerTier = .free,
                options: GatewayOptions = GatewayOptions(), clock: any TimeSource = SystemClock(),
                gatewayQueueLimit: Int = 1024, beforeStart: (GatewayEngine) throws -> Void = { _ in }) throws
    {
        gwBind = network.bind(address: IPAddress(v4: 0xC000_0201), queueLimit: gatewayQueueLimit)
        guard let gwDevice = WireGuardDevice(privateKey: EngineHarness.gatewayKey) else { throw HarnessError("bad gateway key") }
        alice = try EngineClient(privateKey: EngineHarness.clientKey, bind: network.bind(address: IPAddress(v4: 0xC000_0202)),
                                 gatewayKey: gwDevice.publicKey, gateway: gwBind.endpoint)
        let set = PolicyParser.parse(rules)
        guard !set.hasErrors else { throw HarnessError("rules: \(set.diagnostics)") }
        engine = GatewayEngine(device: gwDevice, tun: tun, bind: gwBind, clock: clock,
                               policy: (set, CompiledPolicy(set)), options: options, log: log.logger)
        engine.addPeer(name: "alice", publicKey: alice.publicKey, presharedKey: nil,
                       allowedIPs: [IPPrefix("10.99.0.2/32")!, IPPrefix("fd99::2/128")!], endpoint: nil,
                       persistentKeepalive: 0, tier: aliceTier)
        try beforeStart(engine)
        engine.start()
    }

    deinit { engine.stop() }

    /// A further client on the same network at `address` with key `privateKey` (not yet a peer
    /// of the gateway: add it, e.g. over the UAPI).
    public func client(privateKey: [UInt8], address: IPAddress) throws -> EngineClient {
        try EngineClient(privateKey: privateKey, bind: network.bind(address: address),
                         gatewayKey: engine.device.publicKey, gateway: gwBind.endpoint)
    }

    // `alice`'s steps, as most tests need only her.
    public var client: WireGuardDevice { alice.device }
    public var clientBind: ChannelBind {
        get { alice.bind }
        set { alice.bind = newValue }
    }
    public var gatewayPeer: PeerHandle { alice.gatewayPeer }
    public var buffer: UnsafeMutableRawBufferPointer { alice.buffer }
    public var output: UnsafeMutableRawBufferPointer { alice.output }
    public var nowNs: UInt64 { SystemClock().monotonicNanoseconds() }
    public func sendToGateway(_ bytes: some Collection<UInt8>) throws { try alice.sendToGateway(bytes) }
    public func receiveFromGateway(timeout: Int32 = 2000) throws -> [UInt8]? { try alice.receiveFromGateway(timeout: timeout) }
    public func handshake() throws { try alice.handshake() }
    public func sendPacket(_ packet: [UInt8]) throws { try alice.sendPacket(packet) }
    public func receivePacket(timeout: Int32 = 2000) throws -> [UInt8]? { try alice.receivePacket(timeout: timeout) }
}

/// IPv4 packets for tests (checksums are not checked by the gateway's parser; lengths are).
public enum TestPackets {
    public static func ipv4(_ proto: UInt8, from src: String, to dst: String, _ transport: [UInt8]) -> [UInt8] {
        let s = IPAddress(src)!.v4, d = IPAddress(dst)!.v4
        let total = 20 + transport.count
        var p: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 1, 0x40, 0, 64, proto, 0, 0]
        for v in [s, d] { p += [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        return p + transport
    }

    public static func udp(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16,
                           payload: [UInt8] = Array("hi".utf8)) -> [UInt8]
    {
        let len = 8 + payload.count
        return ipv4(17, from: src, to: dst, [UInt8(sport >> 8), UInt8(sport & 0xff), UInt8(dport >> 8), UInt8(dport & 0xff),
                                             UInt8(len >> 8), UInt8(len & 0xff), 0, 0] + payload)
    }

    public static func tcpSYN(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16) -> [UInt8] {
        ipv4(6, from: src, to: dst, [UInt8(sport >> 8), UInt8(sport & 0xff), UInt8(dport >> 8), UInt8(dport & 0xff),
                                     0, 0, 0x10, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0])
    }

    /// A TCP segment (20-byte header, no options) with `flags` (TCP flag bits), `seq` and `payload`.
    public static func tcp(from src: String, _ sport: UInt16, to dst: String, _ dport: UInt16, seq: UInt32,
                           ack: UInt32 = 0, flags: UInt8, payload: [UInt8] = []) -> [UInt8]
    {
        ipv4(6, from: src, to: dst, be16(sport) + be16(dport) + be32(seq) + be32(ack) + [0x50, flags]
             + [0xff, 0xff, 0, 0, 0, 0] + payload)
    }

    /// A TLS 1.3-style ClientHello naming `serverName`, in one record, padded with a key-share-sized
    /// extension to about `size` bytes (so tests can split it over segments).
    public static func tlsClientHello(serverName: String, size: Int = 1500) -> [UInt8] {
        var body: [UInt8] = [3, 3] + [UInt8](repeating: 0x5A, count: 32) + [32] + [UInt8](repeating: 7, count: 32)
        body += be16(4) + [0x13, 0x01, 0x13, 0x02] + [1, 0]
        var ext: [UInt8] = []
        func add(_ t: UInt16, _ b: [UInt8]) { ext += be16(t) + be16(UInt16(b.count)) + b }
        add(0x002B, [2, 3, 4])
        add(0x0015, [UInt8](repeating: 0, count: max(0, size - 150)))  // padding (RFC 7685)
        let n = Array(serverName.utf8)
        add(0x0000, be16(UInt16(n.count + 3)) + [0] + be16(UInt16(n.count)) + n)
        body += be16(UInt16(ext.count)) + ext
        let hs: [UInt8] = [1, 0] + be16(UInt16(body.count)) + body
        return [22, 3, 1] + be16(UInt16(hs.count)) + hs
    }

    /// A DNS response (RFC 1035 §4) to an A query for `name`: one A record `address` with `ttl`.
    public static func dnsResponse(id: UInt16 = 0x1234, name: String, address: String, ttl: UInt32 = 300) -> [UInt8] {
        var q: [UInt8] = []
        for label in name.split(separator: ".") { q += [UInt8(label.utf8.count)] + Array(label.utf8) }
        q += [0]
        let a = IPAddress(address)!.v4
        return be16(id) + [0x81, 0x80] + be16(1) + be16(1) + be16(0) + be16(0) + q + be16(1) + be16(1)
            + [0xC0, 0x0C] + be16(1) + be16(1) + be32(ttl) + be16(4) + be32(a)
    }

    public static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
    public static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
}
