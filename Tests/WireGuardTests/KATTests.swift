// The handshake known-answer vectors from the independent Python implementation (vectors/).
import Core
import Testing
@testable import WireGuard

struct KATTests {
    static func field(_ v: KATVector, _ name: String) -> [UInt8] { hex(v.fields[name]!) }

    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }

    /// The pure Noise functions, fed the vector's keys, produce the vector's bytes exactly.
    @Test(arguments: katVectors.map(\.name))
    func noiseFunctionsMatchVector(name: String) throws {
        let v = katVectors.first { $0.name == name }!
        let si = Self.field(v, "initiatorStaticPrivate"), sr = Self.field(v, "responderStaticPrivate")
        let ei = Self.field(v, "initiatorEphemeralPrivate"), er = Self.field(v, "responderEphemeralPrivate")
        let psk = Self.field(v, "presharedKey"), cookie = Self.field(v, "cookie")
        let siPub = X25519.publicKey(of: si), srPub = X25519.publicKey(of: sr)

        var (initiation, iState) = try #require(Noise.createInitiation(
            senderIndex: v.initiatorIndex, localStaticPublic: siPub, remoteStaticPublic: srPub,
            staticStatic: X25519.sharedSecret(si, srPub)!, ephemeralPrivate: ei,
            timestamp: TAI64N(unixNanoseconds: v.wallClock)))
        MACs.writeMAC1(&initiation, key: MACs.mac1Key(srPub))
        if !cookie.isEmpty { MACs.writeMAC2(&initiation, cookie: cookie) }
        #expect(hexString(initiation) == v.fields["initiation"]!)

        let consumed = try Noise.consumeInitiation(
            Self.field(v, "initiation"), localStaticPrivate: sr, localStaticPublic: srPub
        ) { key in key.bytes == siPub ? X25519.sharedSecret(sr, siPub) : nil }.get()
        #expect(consumed.remoteStatic.bytes == siPub)
        #expect(consumed.timestamp == TAI64N(unixNanoseconds: v.wallClock))
        #expect(consumed.senderIndex == v.initiatorIndex)

        var (response, rState) = try #require(Noise.createResponse(
            senderIndex: v.responderIndex, receiverIndex: consumed.senderIndex, remoteEphemeral: consumed.remoteEphemeral,
            remoteStatic: siPub, presharedKey: psk, ephemeralPrivate: er, state: consumed.state))
        MACs.writeMAC1(&response, key: MACs.mac1Key(siPub))
        if !cookie.isEmpty { MACs.writeMAC2(&response, cookie: cookie) }
        #expect(hexString(response) == v.fields["response"]!)

        let done = try Noise.consumeResponse(
            Self.field(v, "response"), localEphemeralPrivate: ei, localStaticPrivate: si, presharedKey: psk,
            state: iState).get()
        #expect(done.state.chainKey == rState.chainKey)
        let iKeys = Noise.transportKeys(chainKey: done.state.chainKey, initiator: true)
        let rKeys = Noise.transportKeys(chainKey: rState.chainKey, initiator: false)
        #expect(hexString(iKeys.send) == v.fields["initiatorSendKey"]!)
        #expect(hexString(iKeys.receive) == v.fields["initiatorReceiveKey"]!)
        #expect(rKeys.send == iKeys.receive && rKeys.receive == iKeys.send)
        iState.wipe()
    }

    /// Whole devices reproduce the vector when their randomness is scripted to the vector's ephemeral
    /// keys and indices (ephemeral key first, then the index): initiation, response, then the first two transport messages.
    @Test func devicesReproduceVector() throws {
        let v = katVectors.first { $0.name == "no-psk" }!
        let ri = TestRandom(), rr = TestRandom()
        let initiator = try #require(WireGuardDevice(privateKey: Self.field(v, "initiatorStaticPrivate"), random: ri))
        let responder = try #require(WireGuardDevice(privateKey: Self.field(v, "responderStaticPrivate"), random: rr))
        let toR = initiator.addPeer(PeerConfiguration(publicKey: responder.publicKey, endpoint: endpointB))
        _ = responder.addPeer(PeerConfiguration(publicKey: initiator.publicKey))

        ri.script(Self.field(v, "initiatorEphemeralPrivate") + Self.le32(v.initiatorIndex))
        var buf = [UInt8](repeating: 0, count: 148)
        let r = buf.withUnsafeMutableBytes {
            initiator.initiation(for: toR, into: $0, now: 1, wallClock: v.wallClock)
        }
        #expect(r == .send(range: 0..<148, to: endpointB))
        #expect(hexString(buf) == v.fields["initiation"]!)

        rr.script(Self.field(v, "responderEphemeralPrivate") + Self.le32(v.responderIndex))
        let (r1, _, out1) = deliver(buf, to: responder, from: endpointA, now: 2)
        #expect(r1 == .sendResponse(peer: PeerHandle(rawValue: 1), range: 0..<92))
        #expect(hexString(Array(out1[0..<92])) == v.fields["response"]!)

        let (r2, _, _) = deliver(Array(out1[0..<92]), to: initiator, from: endpointB, now: 3)
        #expect(r2 == .handshakeComplete(peer: toR))

        var ka = [UInt8](repeating: 0, count: 32)
        let k = ka.withUnsafeMutableBytes { initiator.encrypt(peer: toR, buffer: $0, payloadLength: 0, now: 4) }
        #expect(k == .send(range: 0..<32, to: endpointB))
        #expect(hexString(ka) == v.fields["keepalive"]!)

        let payload = Self.field(v, "dataPayload")
        var data = [UInt8](repeating: 0, count: 16) + payload + [UInt8](repeating: 0, count: 64)
        let d = data.withUnsafeMutableBytes {
            initiator.encrypt(peer: toR, buffer: $0, payloadLength: payload.count, now: 5)
        }
        #expect(d == .send(range: 0..<64, to: endpointB))
        #expect(hexString(Array(data[0..<64])) == v.fields["data"]!)

        // And the responder accepts both, confirming its session on the first.
        let (r3, _, _) = deliver(Self.field(v, "keepalive"), to: responder, from: endpointA, now: 6)
        #expect(r3 == .keepalive(peer: PeerHandle(rawValue: 1), sessionConfirmed: true))
        let (r4, input, _) = deliver(Self.field(v, "data"), to: responder, from: endpointA, now: 7)
        #expect(r4 == .data(peer: PeerHandle(rawValue: 1), range: 16..<36, sessionConfirmed: false))
        #expect(Array(input[16..<36]) == payload)
    }
}

struct CookieKATTests {
    /// A responder under load answers the vector's initiation with exactly the vector's cookie reply
    /// (same secret and nonce scripted), and the initiator decrypts it to the vector's cookie.
    @Test(arguments: katVectors.map(\.name))
    func cookieReplyMatchesVector(name: String) throws {
        let v = katVectors.first { $0.name == name }!
        let f = { KATTests.field(v, $0) }
        let psk: [UInt8]? = name == "no-psk" ? nil : f("presharedKey")
        let ri = TestRandom(), rr = TestRandom()
        let initiator = try #require(WireGuardDevice(privateKey: f("initiatorStaticPrivate"), random: ri))
        let responder = try #require(WireGuardDevice(privateKey: f("responderStaticPrivate"), random: rr))
        let toR = initiator.addPeer(PeerConfiguration(publicKey: responder.publicKey, presharedKey: psk, endpoint: endpointB))
        _ = responder.addPeer(PeerConfiguration(publicKey: initiator.publicKey, presharedKey: psk))

        ri.script(f("initiatorEphemeralPrivate") + KATTests.le32(v.initiatorIndex))
        var ini = [UInt8](repeating: 0, count: 148)
        _ = ini.withUnsafeMutableBytes { initiator.initiation(for: toR, into: $0, now: 1, wallClock: v.wallClock) }
        #expect(ini[0..<132] == f("initiation")[0..<132])

        rr.script(f("cookieSecret") + f("cookieNonce"))
        let (r1, _, out) = deliver(f("initiation"), to: responder, from: endpointA, now: 2, underLoad: true)
        #expect(r1 == .sendCookieReply(range: 0..<64))
        #expect(hexString(Array(out[0..<64])) == v.fields["cookieReply"]!)

        let (r2, _, _) = deliver(Array(out[0..<64]), to: initiator, from: endpointB, now: 3)
        #expect(r2 == .cookieStored(peer: toR))
        let cookie = try #require(initiator.peer(toR)!.state.withLock { $0.cookie })
        #expect(hexString(cookie) == v.fields["cookieValue"]!)
        var withMAC2 = f("initiation")
        MACs.writeMAC2(&withMAC2, cookie: cookie)
        #expect(hexString(Array(withMAC2[132..<148])) == v.fields["initiationMAC2WithCookie"]!)
    }
}
