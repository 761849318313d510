// Every malformed message is rejected with a typed reason and changes nothing.
import Core
import Testing
@testable import WireGuard

struct MalformedMessageTests {
    struct Snapshot: Equatable {
        let a: PeerStatus
        let b: PeerStatus
        let indicesA: Int
        let indicesB: Int
    }

    static func snapshot(_ p: Pair) -> Snapshot {
        Snapshot(a: p.a.status(of: p.peerB)!, b: p.b.status(of: p.peerA)!, indicesA: p.a.indexCount,
                 indicesB: p.b.indexCount)
    }

    /// Delivers `msg` to B from A and expects `reason` with no state change on either side.
    static func expectDrop(_ p: Pair, _ msg: [UInt8], _ reason: DropReason, toB: Bool = true, now: UInt64 = 5 * second,
                           sourceLocation: SourceLocation = #_sourceLocation)
    {
        let before = snapshot(p)
        let countBefore = p.device(!toB).dropCount(reason)
        let (r, _, _) = deliver(msg, to: toB ? p.b : p.a, from: toB ? endpointA : endpointB, now: now)
        #expect(r == .drop(reason), sourceLocation: sourceLocation)
        #expect(snapshot(p) == before, sourceLocation: sourceLocation)
        #expect(p.device(!toB).dropCount(reason) == countBefore + 1, sourceLocation: sourceLocation)
    }

    /// Rewrites mac1 so a modified initiation/response passes the mac1 check.
    static func remac(_ msg: [UInt8], for device: WireGuardDevice) -> [UInt8] {
        var m = msg
        MACs.writeMAC1(&m, key: MACs.mac1Key(device.publicKey.bytes))
        return m
    }

    @Test func everyTruncationAndExtensionIsBadLength() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        for n in 0..<ini.count { Self.expectDrop(p, Array(ini[0..<n]), .badLength) }
        Self.expectDrop(p, ini + [0], .badLength)
        let (_, _, out) = deliver(ini, to: p.b, from: endpointA, now: second)
        let response = Array(out[0..<92])
        for n in 0..<response.count { Self.expectDrop(p, Array(response[0..<n]), .badLength, toB: false) }
        Self.expectDrop(p, response + [0], .badLength, toB: false)
        _ = deliver(response, to: p.a, from: endpointB, now: second)
        let (_, data) = seal(p, fromA: true, ipv4Packet(20), now: second)
        for n in 0..<32 { Self.expectDrop(p, Array(data[0..<n]), .badLength) }
        var cookie = [UInt8](repeating: 0, count: 64)
        cookie[0] = 3
        Self.expectDrop(p, Array(cookie[0..<63]), .badLength)
        Self.expectDrop(p, cookie + [0], .badLength)
    }

    @Test func wrongTypeAndNonzeroReservedBytes() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        for t: UInt8 in [0, 5, 255] {
            var m = ini
            m[0] = t
            Self.expectDrop(p, m, .unknownType)
        }
        for i in 1..<4 {
            var m = ini
            m[i] = 1
            Self.expectDrop(p, m, .unknownType)
        }
    }

    @Test func badMAC1() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        for i in [0 + 4, 8, 40, 100, 116, 131] {
            var m = ini
            m[i] ^= 0x80
            Self.expectDrop(p, m, .badMAC1)
        }
        // An initiation meant for someone else (mac1 keyed by another public key).
        let other = WireGuardDevice(privateKey: TestRandom(seed: 99).bytes(32))!
        Self.expectDrop(p, Self.remac(ini, for: other), .badMAC1)
    }

    @Test func corruptedHandshakeCiphertextsAndUnknownPeer() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        for i in [40, 87, 88, 115] {
            var m = ini
            m[i] ^= 1
            Self.expectDrop(p, Self.remac(m, for: p.b), .handshakeDecryptFailed)
        }
        var m = ini
        m[8] ^= 1  // a different ephemeral key: the static no longer decrypts
        Self.expectDrop(p, Self.remac(m, for: p.b), .handshakeDecryptFailed)
        // A stranger (not a configured peer) with a valid handshake.
        let stranger = WireGuardDevice(privateKey: TestRandom(seed: 5).bytes(32), random: TestRandom(seed: 6))!
        let h = stranger.addPeer(PeerConfiguration(publicKey: p.b.publicKey))
        var buf = [UInt8](repeating: 0, count: 148)
        _ = buf.withUnsafeMutableBytes { stranger.initiation(for: h, into: $0, now: second, wallClock: second) }
        Self.expectDrop(p, buf, .unknownPeer)
        // The original still works afterwards.
        let (r, _, _) = deliver(ini, to: p.b, from: endpointA, now: second)
        guard case .sendResponse = r else { Issue.record("\(r)"); return }
    }

    @Test func replayedAndOlderTimestampsAndFlood() {
        let p = Pair()
        let old = initiation(p, fromA: true, now: second, wall: 100 * second)!
        let newer = initiation(p, fromA: true, now: 7 * second, wall: 200 * second)!
        let (r, _, _) = deliver(newer, to: p.b, from: endpointA, now: 8 * second)
        guard case .sendResponse = r else { Issue.record("\(r)"); return }
        Self.expectDrop(p, newer, .replayedTimestamp, now: 9 * second)
        Self.expectDrop(p, old, .replayedTimestamp, now: 9 * second)
        // A newer initiation within 20 ms of the last accepted one is a flood.
        let newest = initiation(p, fromA: true, now: 13 * second, wall: 300 * second)!
        Self.expectDrop(p, newest, .initiationFlood, now: 8 * second + WireGuardProtocol.handshakeInitiationRate)
        let (r2, _, _) = deliver(newest, to: p.b, from: endpointA, now: 8 * second + WireGuardProtocol.handshakeInitiationRate + 1)
        guard case .sendResponse = r2 else { Issue.record("\(r2)"); return }
    }

    @Test func responseProblems() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        let (_, _, out) = deliver(ini, to: p.b, from: endpointA, now: second)
        let response = Array(out[0..<92])
        var wrongIndex = response
        wrongIndex[8] ^= 0xff
        Self.expectDrop(p, Self.remac(wrongIndex, for: p.a), .unknownReceiverIndex, toB: false)
        var badEmpty = response
        badEmpty[50] ^= 1
        Self.expectDrop(p, Self.remac(badEmpty, for: p.a), .handshakeDecryptFailed, toB: false)
        var badMac = response
        badMac[60] ^= 1
        Self.expectDrop(p, badMac, .badMAC1, toB: false)
        let (r, _, _) = deliver(response, to: p.a, from: endpointB, now: second)
        #expect(r == .handshakeComplete(peer: p.peerB))
        // The same response again: its index now names a session, not a pending handshake.
        Self.expectDrop(p, response, .unexpectedResponse, toB: false)
    }

    @Test func transportProblems() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        let (_, msg) = seal(p, fromA: true, ipv4Packet(60), now: second)
        for i in [16, 40, msg.count - 1] {
            var m = msg
            m[i] ^= 1
            Self.expectDrop(p, m, .badTag)
        }
        var counter = msg
        counter[8] ^= 1
        Self.expectDrop(p, counter, .badTag)
        var index = msg
        index[4] ^= 1
        Self.expectDrop(p, index, .unknownReceiverIndex)
        // The untouched message is still accepted once, then is a replay.
        let (r, _, _) = deliver(msg, to: p.b, from: endpointA, now: 5 * second)
        #expect(r == .data(peer: p.peerA, range: 16..<76, sessionConfirmed: true))
        Self.expectDrop(p, msg, .replayedCounter)
        // A well-encrypted packet that is not IP.
        var junk = [UInt8](repeating: 0x11, count: 40)
        junk[0] = 0x70
        let (_, j) = seal(p, fromA: true, junk, now: second)
        let (rj, _, _) = deliver(j, to: p.b, from: endpointA, now: 5 * second)
        #expect(rj == .drop(.invalidInnerPacket))
        var lying = ipv4Packet(40)
        lying[3] = 80  // total length beyond the packet
        let (_, l) = seal(p, fromA: true, lying, now: second)
        let (rl, _, _) = deliver(l, to: p.b, from: endpointA, now: 5 * second)
        #expect(rl == .drop(.invalidInnerPacket))
    }

    @Test func cookieReplyProblems() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        var reply = [UInt8](repeating: 0x5a, count: 64)
        reply.replaceSubrange(0..<4, with: [3, 0, 0, 0])
        reply.replaceSubrange(4..<8, with: ini[4..<8])
        Self.expectDrop(p, reply, .invalidCookieReply, toB: false)
        reply[4] ^= 0xff
        Self.expectDrop(p, reply, .unknownReceiverIndex, toB: false)
    }

    @Test func ipv6InnerPacketLength() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        var v6 = [UInt8](repeating: 0, count: 64)
        v6[0] = 0x60
        v6[5] = 8  // payload length 8 → 48 bytes
        let (r, got) = transfer(p, fromA: true, v6, now: second)
        #expect(r == .data(peer: p.peerA, range: 16..<64, sessionConfirmed: true))
        #expect(got == Array(v6[0..<48]))
    }
}
