// Two devices over in-memory buffers: handshakes in both roles, transport, rotation, rekey.
import Core
import Packet
import Testing
@testable import WireGuard

struct HandshakeTests {
    @Test(arguments: [false, true], [false, true])
    func handshakeAndTransportBothWays(initiatorIsA: Bool, withPSK: Bool) {
        let pair = Pair(psk: withPSK ? Array(repeating: 0x42, count: 32) : nil)
        handshake(pair, initiatorIsA: initiatorIsA, now: second, wall: 1_000 * second)
        // The initiator may send at once; the responder must wait for confirmation.
        let (rr, _) = seal(pair, fromA: !initiatorIsA, ipv4Packet(60), now: second)
        #expect(rr == .handshakeNeeded)
        let packet = ipv4Packet(100, fill: 1)
        let (r1, got1) = transfer(pair, fromA: initiatorIsA, packet, now: second)
        #expect(r1 == .data(peer: pair.handle(from: !initiatorIsA), range: 16..<116, sessionConfirmed: true))
        #expect(got1 == packet)
        for size in [20, 21, 47, 1420] {
            let p = ipv4Packet(size, fill: UInt8(size & 0xff))
            let (r2, got2) = transfer(pair, fromA: !initiatorIsA, p, now: 2 * second)
            #expect(r2 == .data(peer: pair.handle(from: initiatorIsA), range: 16..<(16 + size), sessionConfirmed: false))
            #expect(got2 == p)
            let (r3, got3) = transfer(pair, fromA: initiatorIsA, p, now: 2 * second)
            #expect(got3 == p, "\(r3)")
        }
        let sa = pair.a.status(of: pair.peerB)!, sb = pair.b.status(of: pair.peerA)!
        #expect(sa.hasPresharedKey == withPSK && sb.hasPresharedKey == withPSK)
        #expect(sa.hasCurrentKeypair && sb.hasCurrentKeypair)
        #expect(sb.endpoint == endpointA && sa.endpoint == endpointB)
    }

    @Test func mismatchedPSKFailsHandshake() {
        let pair = Pair(psk: Array(repeating: 1, count: 32))
        pair.b.updatePeer(pair.peerA, PeerConfiguration(publicKey: pair.a.publicKey, presharedKey: Array(repeating: 2, count: 32)))
        let ini = initiation(pair, fromA: true, now: second, wall: second)!
        let (r1, _, out) = deliver(ini, to: pair.b, from: endpointA, now: second)
        guard case .sendResponse(_, let range) = r1 else { Issue.record("\(r1)"); return }
        let (r2, _, _) = deliver(Array(out[range]), to: pair.a, from: endpointB, now: second)
        #expect(r2 == .drop(.handshakeDecryptFailed))
        #expect(pair.a.status(of: pair.peerB)!.hasCurrentKeypair == false)
    }

    @Test func paddingIsToSixteenAndKeepaliveIsEmpty() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        for (size, expected) in [(0, 32), (1, 48), (16, 48), (17, 64), (1419, 32 + 1420), (1420, 32 + 1420)] {
            let (r, msg) = seal(pair, fromA: true, size == 0 ? [] : ipv4Packet(max(size, 20)).prefix(size).map { $0 }, now: second)
            guard case .send = r else { Issue.record("\(r)"); continue }
            #expect(msg.count == expected, "size \(size)")
        }
        let (r, _) = seal(pair, fromA: true, [], now: second)
        guard case .send(_, let to) = r else { Issue.record("\(r)"); return }
        #expect(to == endpointB)
    }

    @Test func keepaliveIsReported() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        let (_, ka) = seal(pair, fromA: true, [], now: second)
        let (r, _, _) = deliver(ka, to: pair.b, from: endpointA, now: second)
        #expect(r == .keepalive(peer: pair.peerA, sessionConfirmed: true))
    }

    @Test func previousKeypairStillDecryptsInFlightPackets() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        _ = transfer(pair, fromA: true, ipv4Packet(40), now: second)  // B confirms
        let (_, inFlight) = seal(pair, fromA: true, ipv4Packet(40, fill: 9), now: 2 * second)
        let (_, inFlightBA) = seal(pair, fromA: false, ipv4Packet(40, fill: 8), now: 2 * second)
        let (_, oldest) = seal(pair, fromA: false, ipv4Packet(40, fill: 7), now: 2 * second)
        // New handshake, A initiates again.
        handshake(pair, initiatorIsA: true, now: 10 * second, wall: 10 * second)
        #expect(pair.a.status(of: pair.peerB)!.hasPreviousKeypair)
        // B still has the old session as current and the new as next.
        #expect(pair.b.status(of: pair.peerA)!.hasNextKeypair)
        let (r1, _, _) = deliver(inFlight, to: pair.b, from: endpointA, now: 10 * second)
        #expect(r1 == .data(peer: pair.peerA, range: 16..<56, sessionConfirmed: false))
        let (r2, _, _) = deliver(inFlightBA, to: pair.a, from: endpointB, now: 10 * second)
        #expect(r2 == .data(peer: pair.peerB, range: 16..<56, sessionConfirmed: false))
        // First packet on the new session confirms it at B and rotates current → previous.
        let (r3, _) = transfer(pair, fromA: true, ipv4Packet(40), now: 11 * second)
        #expect(r3 == .data(peer: pair.peerA, range: 16..<56, sessionConfirmed: true))
        #expect(pair.b.status(of: pair.peerA)!.hasPreviousKeypair)
        // A third handshake drops the first session at A (current → previous, old previous erased):
        // packets still in flight on it are now unknown, those on the second session still decrypt.
        let (_, second2) = seal(pair, fromA: false, ipv4Packet(40), now: 11 * second)
        handshake(pair, initiatorIsA: true, now: 20 * second, wall: 20 * second)
        let (r4, _, _) = deliver(oldest, to: pair.a, from: endpointB, now: 20 * second)
        #expect(r4 == .drop(.unknownReceiverIndex))
        let (r5, _, _) = deliver(second2, to: pair.a, from: endpointB, now: 20 * second)
        #expect(r5 == .data(peer: pair.peerB, range: 16..<56, sessionConfirmed: false))
    }

    @Test func initiatorRekeysAfterTime() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        _ = transfer(pair, fromA: true, ipv4Packet(40), now: second)
        #expect(pair.a.tick(now: 2 * second).isEmpty)
        let t = second + WireGuardProtocol.rekeyAfterTime + 1
        let (r, _) = transfer(pair, fromA: true, ipv4Packet(40), now: t)
        guard case .data = r else { Issue.record("\(r)"); return }
        #expect(pair.a.tick(now: t).contains(.sendInitiation(peer: pair.peerB, retry: false)))
        // The responder does not rekey on time.
        _ = transfer(pair, fromA: false, ipv4Packet(40), now: t)
        #expect(!pair.b.tick(now: t).contains(.sendInitiation(peer: pair.peerA, retry: false)))
    }

    @Test func keysRejectedAfterRejectAfterTime() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        let t = second + WireGuardProtocol.rejectAfterTime
        let (r, _) = seal(pair, fromA: true, ipv4Packet(40), now: t)
        #expect(r == .handshakeNeeded)
        let (_, msg) = seal(pair, fromA: true, ipv4Packet(40), now: t - 1)
        let (r2, _, _) = deliver(msg, to: pair.b, from: endpointA, now: t)
        #expect(r2 == .drop(.expiredKeypair))
    }

    @Test func rekeyAndRejectAfterMessages() throws {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        let peer = try #require(pair.a.peer(pair.peerB))
        let kp = try #require(peer.state.withLock { $0.current })
        kp.sendCounter.store(WireGuardProtocol.rekeyAfterMessages + 1, ordering: .relaxed)
        let (r1, _) = seal(pair, fromA: true, ipv4Packet(40), now: second)
        guard case .send = r1 else { Issue.record("\(r1)"); return }
        #expect(pair.a.tick(now: second).contains(.sendInitiation(peer: pair.peerB, retry: false)))
        kp.sendCounter.store(WireGuardProtocol.rejectAfterMessages - 1, ordering: .relaxed)
        let (r2, last) = seal(pair, fromA: true, ipv4Packet(40), now: second)
        guard case .send = r2 else { Issue.record("\(r2)"); return }
        #expect(MessageLayout.readLE64(last, 8) == WireGuardProtocol.rejectAfterMessages - 1)
        let (r3, _) = seal(pair, fromA: true, ipv4Packet(40), now: second)
        #expect(r3 == .handshakeNeeded)
        // A receiver refuses a counter at the limit even with a valid tag.
        var forged = last
        MessageLayout.writeLE64Array(&forged, 8, WireGuardProtocol.rejectAfterMessages)
        let (r4, _, _) = deliver(forged, to: pair.b, from: endpointA, now: second)
        #expect(r4 == .drop(.expiredKeypair))
    }

    @Test func responderReplacesPendingInitiation() {
        // Both sides initiate at once; B answers A's initiation, which cancels B's own pending one.
        let pair = Pair()
        let fromA = initiation(pair, fromA: true, now: second, wall: second)!
        let fromB = initiation(pair, fromA: false, now: second, wall: second)!
        let (r1, _, out1) = deliver(fromA, to: pair.b, from: endpointA, now: second)
        guard case .sendResponse(_, let range) = r1 else { Issue.record("\(r1)"); return }
        let (r2, _, _) = deliver(Array(out1[range]), to: pair.a, from: endpointB, now: second)
        #expect(r2 == .handshakeComplete(peer: pair.peerB))
        // A answers B's initiation too (it is newer than nothing) and B completes nothing: its
        // pending initiation index was replaced, so A's response to it is unknown.
        let (r3, _, out3) = deliver(fromB, to: pair.a, from: endpointB, now: second + second / 10)
        guard case .sendResponse(_, let range3) = r3 else { Issue.record("\(r3)"); return }
        let (r4, _, _) = deliver(Array(out3[range3]), to: pair.b, from: endpointA, now: second + second / 10)
        #expect(r4 == .drop(.unknownReceiverIndex))
    }

    @Test func refusedPeerGetsNoResponseAndNoStateChange() {
        let pair = Pair()
        pair.b.setRefused(pair.peerA, true)
        let ini = initiation(pair, fromA: true, now: second, wall: second)!
        let before = pair.b.indexCount
        let (r, _, _) = deliver(ini, to: pair.b, from: endpointA, now: second)
        #expect(r == .refused(peer: pair.peerA))
        #expect(pair.b.indexCount == before)
        #expect(pair.b.status(of: pair.peerA)!.endpoint == nil)
        let (s, _) = seal(pair, fromA: false, ipv4Packet(40), now: second)
        #expect(s == .refused)
        // Lifting the refusal lets the same initiation through (its timestamp was not recorded).
        pair.b.setRefused(pair.peerA, false)
        let (r2, _, _) = deliver(ini, to: pair.b, from: endpointA, now: second)
        guard case .sendResponse = r2 else { Issue.record("\(r2)"); return }
    }

    /// A refused peer's authenticated initiation is put to the caller with `refused` true, so a
    /// watchdog whose pause just ended can answer it at arrival instead of at its next tick.
    @Test func admissionDecidesForARefusedPeerAtArrival() {
        let pair = Pair()
        pair.b.setRefused(pair.peerA, true)
        let ini = initiation(pair, fromA: true, now: second, wall: second)!
        var seen: [Bool] = []
        let (r, _, _) = deliver(ini, to: pair.b, from: endpointA, now: second) { peer, refused in
            seen.append(refused)
            pair.b.setRefused(peer, false)  // what the watchdog does when the pause is over
            return true
        }
        #expect(seen == [true])
        guard case .sendResponse = r else { Issue.record("\(r)"); return }
        #expect(pair.b.status(of: pair.peerA)?.refused == false)
    }

    @Test func admissionIsAskedBeforeAnyResponseKeypairOrState() {
        let pair = Pair()
        let ini = initiation(pair, fromA: true, now: second, wall: second)!
        let before = pair.b.indexCount
        var asked: [PeerHandle] = []
        let (r, _, out) = deliver(ini, to: pair.b, from: endpointA, now: second) { peer, refused in
            #expect(!refused)
            asked.append(peer)
            return false
        }
        #expect(asked == [pair.peerA])
        #expect(r == .refused(peer: pair.peerA))
        #expect(out.allSatisfy { $0 == 0 }, "no response written")
        #expect(pair.b.indexCount == before, "no keypair installed")
        #expect(pair.b.status(of: pair.peerA)!.endpoint == nil)
        // Nothing was consumed: the same initiation is answered once admitted.
        let (r2, _, _) = deliver(ini, to: pair.b, from: endpointA, now: second) { _, _ in true }
        guard case .sendResponse = r2 else { Issue.record("\(r2)"); return }
        // Only authenticated, fresh initiations are put to the caller: a replay is dropped first.
        var askedAgain = 0
        let (r3, _, _) = deliver(ini, to: pair.b, from: endpointA, now: 2 * second) { _, _ in
            askedAgain += 1
            return true
        }
        #expect(r3 == .drop(.replayedTimestamp) && askedAgain == 0)
    }

    @Test func dropKeysKillsSessionAtOnce() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        let (_, msg) = seal(pair, fromA: true, ipv4Packet(40), now: second)
        pair.b.dropKeys(pair.peerA)
        let (r, _, _) = deliver(msg, to: pair.b, from: endpointA, now: second)
        #expect(r == .drop(.unknownReceiverIndex))
        #expect(pair.b.indexCount == 0)
        #expect(pair.b.tick(now: 1000 * second).isEmpty)
    }

    @Test func removePeerFreesIndices() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        #expect(pair.a.indexCount == 1)
        pair.a.removePeer(pair.peerB)
        #expect(pair.a.indexCount == 0)
        #expect(pair.a.peerHandles.isEmpty)
        let (r, _) = seal(pair, fromA: true, ipv4Packet(40), now: second)
        #expect(r == .unknownPeer)
    }

    @Test func addPeerTwiceReturnsSameHandle() {
        let pair = Pair()
        let again = pair.a.addPeer(PeerConfiguration(publicKey: pair.b.publicKey, persistentKeepaliveSeconds: 25))
        #expect(again == pair.peerB)
        #expect(pair.a.status(of: again)!.persistentKeepaliveSeconds == 25)
    }

    @Test func initiationRateLimitedToOnePerRekeyTimeout() {
        let pair = Pair()
        #expect(initiation(pair, fromA: true, now: second, wall: second) != nil)
        var buf = [UInt8](repeating: 0, count: 148)
        let r = buf.withUnsafeMutableBytes {
            pair.a.initiation(for: pair.peerB, into: $0, now: second + WireGuardProtocol.rekeyTimeout - 1, wallClock: 2 * second)
        }
        #expect(r == .handshakeInProgress)
        #expect(initiation(pair, fromA: true, now: second + WireGuardProtocol.rekeyTimeout, wall: 3 * second) != nil)
    }
}

struct HandshakeHygieneTests {
    @Test func repeatedHandshakesDoNotLeakIndices() {
        let pair = Pair()
        var t = second
        for i in 0..<12 {
            handshake(pair, initiatorIsA: i % 3 != 0, now: t, wall: t)
            _ = transfer(pair, fromA: i % 2 == 0, ipv4Packet(40), now: t)
            _ = transfer(pair, fromA: i % 2 != 0, ipv4Packet(40), now: t)
            #expect(pair.a.indexCount <= 3 && pair.b.indexCount <= 3, "round \(i)")
            t += 6 * second
        }
    }

    @Test func handshakeSecretsWipedAfterCompletion() {
        let pair = Pair()
        // Nothing is allocated for a peer we never initiated to (10,000 idle peers, issue 15).
        #expect(pair.a.peer(pair.peerB)!.state.withLock { $0.handshake.secrets == nil })
        _ = initiation(pair, fromA: true, now: second, wall: second)
        #expect(pair.a.peer(pair.peerB)!.state.withLock { $0.handshake.secrets?.isZero == false })
        let (_, _, out) = deliver(initiation(pair, fromA: false, now: second, wall: second)!, to: pair.a, from: endpointB, now: second)
        _ = out
        // A answered B's initiation: its own pending initiation was abandoned and wiped.
        #expect(pair.a.peer(pair.peerB)!.state.withLock { $0.handshake.secrets?.isZero == true && !$0.handshake.initiationSent })
        let pair2 = Pair()
        handshake(pair2, initiatorIsA: true, now: second, wall: second)
        #expect(pair2.a.peer(pair2.peerB)!.state.withLock { $0.handshake.secrets?.isZero == true })
    }
}

struct RoamingTests {
    @Test func endpointFollowsAuthenticatedPacketsOnly() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        _ = transfer(pair, fromA: true, ipv4Packet(40), now: second)
        let roamed = Endpoint(address: IPAddress("2001:db8::7")!, port: 1234)
        let (_, msg) = seal(pair, fromA: true, ipv4Packet(40), now: 2 * second)
        // A forged copy from elsewhere does not move the endpoint.
        var bad = msg
        bad[20] ^= 1
        _ = deliver(bad, to: pair.b, from: roamed, now: 2 * second)
        #expect(pair.b.endpoint(of: pair.peerA) == endpointA)
        // The authentic packet from the new address does, and B's replies go there.
        _ = deliver(msg, to: pair.b, from: roamed, now: 2 * second)
        #expect(pair.b.endpoint(of: pair.peerA) == roamed)
        let (r, _) = seal(pair, fromA: false, ipv4Packet(40), now: 2 * second)
        guard case .send(_, let to) = r else { Issue.record("\(r)"); return }
        #expect(to == roamed)
    }
}
