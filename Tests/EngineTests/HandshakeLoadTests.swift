import Core
import Engine
import Packet
import Runtime
import Synchronization
import SystemIO
import Testing
import TestSupport
import WireGuard

/// An admission port whose `admitInitiation` blocks while the gate is shut, so a test can hold the
/// handshake thread busy for as long as it likes (as a flood of X25519 work would).
final class GateAdmission: HandshakeAdmission, @unchecked Sendable {
    // Safe: `open` is read and written only with `lock` held.
    private let lock = ConditionLock()
    private var open = true
    let entered = Atomic<Int>(0)

    func shut() { lock.withLock { open = false } }
    func release() {
        lock.withLock {
            open = true
            lock.broadcast()
        }
    }

    func admitInitiation(peer: PeerHandle, refused: Bool) -> Admission {
        entered.add(1, ordering: .relaxed)
        lock.withLock { while !open { lock.wait() } }
        return .admit
    }
    func handshakeCompleted(peer: PeerHandle) -> Admission { .admit }
    func handshakeRefused(peer: PeerHandle) {}
}

/// Handshakes under load: what counts toward cookie mode (whitepaper §5.3), and the handshake
/// thread that keeps transport data flowing while handshakes wait.
@Suite(.serialized) struct HandshakeLoadTests {
    static let bobKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }

    /// 148 bytes of type 1: random, with mac1 over `key` when given (else a wrong mac1).
    static func fakeInitiation(_ seed: Int, mac1Over key: WireGuard.PublicKey? = nil) -> [UInt8] {
        var m = (0..<MessageLayout.Initiation.size).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ (seed &* 7919) ^ (seed >> 8)) }
        m[0] = 1; m[1] = 0; m[2] = 0; m[3] = 0
        if let key { MACs.writeMAC1(&m, key: MACs.mac1Key(key.bytes)) }
        return m
    }

    /// Sends `datagrams` to the gateway from `bind`, in batches.
    static func flood(_ h: EngineHarness, from bind: ChannelBind, _ datagrams: [[UInt8]]) throws {
        let batch = PacketBatch(capacity: 64, slotSize: 256)
        var i = 0
        while i < datagrams.count {
            batch.reset()
            let n = min(64, datagrams.count - i)
            for k in 0..<n { batch.set(k, bytes: datagrams[i + k], endpoint: h.gwBind.endpoint) }
            batch.count = n
            _ = try bind.send(batch)
            i += n
        }
    }

    static func waitFor(_ what: String, timeoutMs: Int = 5000, _ condition: () -> Bool) -> Bool {
        let deadline = SystemClock().monotonicNanoseconds() + UInt64(timeoutMs) * 1_000_000
        while !condition() {
            if SystemClock().monotonicNanoseconds() > deadline { return false }
            Sys.sleep(milliseconds: 2)
        }
        return true
    }

    /// Defect 2: 1-byte datagrams starting with 1–3 and initiations with a wrong mac1, far more than
    /// the under-load rate within one second (a frozen clock), leave the gateway out of cookie
    /// mode: alice's initiation is answered with a response, not a cookie reply.
    @Test func junkFloodDoesNotMakeALegitimateInitiationGetACookie() throws {
        let h = try EngineHarness(clock: ManualClock(), gatewayQueueLimit: 4096)
        let junk = h.network.bind(address: IPAddress(v4: 0xC000_0263), queueLimit: 4096)
        var datagrams: [[UInt8]] = []
        for i in 0..<600 { datagrams.append([UInt8(1 + i % 3)]) }
        for i in 0..<600 { datagrams.append(Self.fakeInitiation(i)) }
        try Self.flood(h, from: junk, datagrams)
        try h.alice.sendInitiation()
        let answer = try #require(try h.receiveFromGateway(timeout: 5000), "no answer to alice")
        #expect(answer.first == 2 && answer.count == MessageLayout.Response.size,
                "alice got type \(answer.first ?? 0), \(answer.count) bytes (3 = cookie reply)")
        #expect(h.engine.device.dropCount(.badMAC1) == 600)
        #expect(h.engine.device.dropCount(.badLength) == 600)
        #expect(junk.pending == 0, "nothing was answered to the junk")
    }

    /// The control: as many initiations with a valid mac1 (unknown static keys, as tunnelbench
    /// hsflood sends them) do put the gateway under load, so alice gets a cookie reply first.
    @Test func mac1ValidFloodStillEngagesCookies() throws {
        let h = try EngineHarness(clock: ManualClock(), gatewayQueueLimit: 4096)
        let flooder = h.network.bind(address: IPAddress(v4: 0xC000_0264), queueLimit: 4096)
        let key = h.engine.device.publicKey
        try Self.flood(h, from: flooder, (0..<300).map { Self.fakeInitiation($0, mac1Over: key) })
        try h.alice.sendInitiation()
        let answer = try #require(try h.receiveFromGateway(timeout: 5000), "no answer to alice")
        #expect(answer.first == 3 && answer.count == MessageLayout.CookieReply.size,
                "alice got type \(answer.first ?? 0), \(answer.count) bytes")
        let decrypted = h.engine.device.dropCount(.handshakeDecryptFailed) + h.engine.device.dropCount(.invalidPublicKey)
        #expect(decrypted == 256, "the first 256 were worked on, then cookies")
        #expect(flooder.pending == 44, "cookie replies to the rest of the flood")
    }

    /// Defect 6: while the handshake thread is busy (held inside the admission port by bob's
    /// initiation) and 3,000 initiations wait behind it, alice's established session keeps
    /// moving packets both ways; bob's handshake completes once the admission returns.
    @Test func establishedPeerFlowsWhileThousandsOfInitiationsWait() throws {
        let gate = GateAdmission()
        var options = GatewayOptions()
        options.handshakeQueueCapacity = 4096
        let h = try EngineHarness(options: options, gatewayQueueLimit: 8192) { $0.admission = gate }
        defer { gate.release() }
        try h.handshake()
        let bob = try h.client(privateKey: Self.bobKey, address: IPAddress(v4: 0xC000_0203))
        h.engine.addPeer(name: "bob", publicKey: bob.publicKey, presharedKey: nil,
                         allowedIPs: [IPPrefix("10.99.0.3/32")!], endpoint: nil, persistentKeepalive: 0, tier: .free)

        gate.shut()
        try bob.sendInitiation()
        #expect(Self.waitFor("bob in admission") { gate.entered.load(ordering: .relaxed) == 2 })
        let flooder = h.network.bind(address: IPAddress(v4: 0xC000_0265), queueLimit: 64)
        try Self.flood(h, from: flooder, (0..<3000).map { Self.fakeInitiation($0) })

        for port in UInt16(41000)..<41020 {
            let out = TestPackets.udp(from: "10.99.0.2", port, to: "198.19.0.2", 53)
            try h.sendPacket(out)
            #expect(h.tun.waitWritten(count: 1) == [out], "alice's packet \(port) while handshakes wait")
            let reply = TestPackets.udp(from: "198.19.0.2", 53, to: "10.99.0.2", port)
            h.tun.inject(reply)
            #expect(try h.receivePacket() == reply)
        }
        #expect(h.engine.handshakeBacklog == 3000, "the initiations were still queued")
        #expect(h.engine.counters.count(.handshakeBacklogFull) == 0)

        gate.release()
        let response = try #require(try bob.receiveFromGateway(timeout: 5000), "bob's response")
        #expect(bob.receive(response) == .handshakeComplete(peer: bob.gatewayPeer))
        // Every queued initiation is worked off afterwards (the backlog empties a batch before the
        // batch is done, so wait for the count).
        #expect(Self.waitFor("queue worked off", timeoutMs: 20000) { h.engine.device.dropCount(.badMAC1) == 3000 })
        #expect(h.engine.handshakeBacklog == 0)
    }

    /// A full handshake queue drops and counts what does not fit; nothing else is lost.
    @Test func handshakeQueueOverflowIsCounted() throws {
        let gate = GateAdmission()
        var options = GatewayOptions()
        options.handshakeQueueCapacity = 64
        let h = try EngineHarness(options: options, gatewayQueueLimit: 4096) { $0.admission = gate }
        defer { gate.release() }
        gate.shut()
        try h.alice.sendInitiation()
        #expect(Self.waitFor("alice in admission") { gate.entered.load(ordering: .relaxed) == 1 })
        let flooder = h.network.bind(address: IPAddress(v4: 0xC000_0266), queueLimit: 64)
        try Self.flood(h, from: flooder, (0..<500).map { Self.fakeInitiation($0) })
        #expect(Self.waitFor("overflow counted") { h.engine.counters.count(.handshakeBacklogFull) >= 436 })
        #expect(h.engine.counters.count(.handshakeBacklogFull) == 436)
        #expect(h.engine.handshakeBacklog == 64)
        gate.release()
        let answer = try #require(try h.receiveFromGateway(timeout: 5000), "alice's response")
        #expect(h.alice.receive(answer) == .handshakeComplete(peer: h.gatewayPeer))
    }
}
