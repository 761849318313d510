// Timers as a pure state machine: fed `now`, returning actions.
import Core
import Testing
@testable import WireGuard

struct TimerTests {
    static func retransmitDeadline(_ d: WireGuardDevice, _ h: PeerHandle) -> UInt64? {
        d.peer(h)!.state.withLock { $0.timers.retransmitHandshake }
    }

    @Test func initiationRetryUsesJitterWithinBounds() {
        var offsets = Set<UInt64>()
        for seed in 1...12 {
            let p = Pair(seed: UInt64(seed))
            let t0 = 50 * second
            _ = initiation(p, fromA: true, now: t0, wall: second)
            let due = Self.retransmitDeadline(p.a, p.peerB)!
            let jitter = due - t0 - WireGuardProtocol.rekeyTimeout
            #expect(jitter < 334_000_000)
            offsets.insert(jitter)
            #expect(p.a.tick(now: due - 1).isEmpty)
            #expect(p.a.tick(now: due) == [.sendInitiation(peer: p.peerB, retry: true)])
        }
        #expect(offsets.count > 6)  // jitter really varies with the random source
    }

    @Test func jitterIsDeterministicForAGivenRandomSource() {
        let p1 = Pair(seed: 3), p2 = Pair(seed: 3)
        _ = initiation(p1, fromA: true, now: second, wall: second)
        _ = initiation(p2, fromA: true, now: second, wall: second)
        #expect(Self.retransmitDeadline(p1.a, p1.peerB) == Self.retransmitDeadline(p2.a, p2.peerB))
    }

    @Test func givesUpAfterRekeyAttemptTime() {
        let p = Pair()
        var now = second
        _ = initiation(p, fromA: true, now: now, wall: now)
        var sent = 1
        var gaveUpAt: UInt64?
        while now < 200 * second && gaveUpAt == nil {
            now += second / 10
            for action in p.a.tick(now: now) {
                switch action {
                case .sendInitiation(_, let retry):
                    #expect(retry)
                    if initiation(p, fromA: true, now: now, wall: now, retry: true) != nil { sent += 1 }
                case .handshakeGaveUp: gaveUpAt = now
                default: Issue.record("unexpected \(action)")
                }
            }
        }
        #expect(sent == WireGuardProtocol.maxTimerHandshakes + 2)
        let g = gaveUpAt ?? 0
        #expect(g >= second + WireGuardProtocol.rekeyAttemptTime)
        #expect(g <= second + WireGuardProtocol.rekeyAttemptTime + 20 * (WireGuardProtocol.rekeyTimeout / 5 + 334_000_000))
        // Nothing more is attempted; key material is scheduled for erasure.
        #expect(p.a.tick(now: g + 60 * second).isEmpty)
        #expect(p.a.tick(now: g + 3 * WireGuardProtocol.rejectAfterTime) == [.keysZeroed(peer: p.peerB)])
        #expect(p.a.indexCount == 0)
    }

    @Test func retriesRestartWhenTrafficAsksAgain() {
        let p = Pair()
        _ = initiation(p, fromA: true, now: second, wall: second)
        let due = Self.retransmitDeadline(p.a, p.peerB)!
        _ = p.a.tick(now: due)
        #expect(p.a.peer(p.peerB)!.state.withLock { $0.timers.handshakeAttempts } == 1)
        _ = initiation(p, fromA: true, now: due, wall: due)  // not a retry: budget restarts
        #expect(p.a.peer(p.peerB)!.state.withLock { $0.timers.handshakeAttempts } == 0)
    }

    @Test func keepaliveAfterReceivingDataWithoutSending() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        _ = transfer(p, fromA: true, ipv4Packet(40), now: 2 * second)
        #expect(p.b.tick(now: 2 * second + WireGuardProtocol.keepaliveTimeout - 1).isEmpty)
        #expect(p.b.tick(now: 2 * second + WireGuardProtocol.keepaliveTimeout) == [.sendKeepalive(peer: p.peerA)])
        // If B answers with data, no keepalive is needed.
        _ = transfer(p, fromA: true, ipv4Packet(40), now: 20 * second)
        _ = transfer(p, fromA: false, ipv4Packet(40), now: 21 * second)
        #expect(!p.b.tick(now: 40 * second).contains(.sendKeepalive(peer: p.peerA)))
    }

    @Test func anotherKeepaliveWhenDataKeptComing() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        _ = transfer(p, fromA: true, ipv4Packet(40), now: 2 * second)
        _ = transfer(p, fromA: true, ipv4Packet(40), now: 3 * second)
        let t = 2 * second + WireGuardProtocol.keepaliveTimeout
        #expect(p.b.tick(now: t) == [.sendKeepalive(peer: p.peerA)])
        _ = seal(p, fromA: false, [], now: t)  // the keepalive goes out and re-arms the timer
        #expect(p.b.tick(now: t + WireGuardProtocol.keepaliveTimeout) == [.sendKeepalive(peer: p.peerA)])
    }

    @Test func newHandshakeWhenSentDataGetsNoAnswer() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        _ = seal(p, fromA: true, ipv4Packet(40), now: 2 * second)
        let quiet = WireGuardProtocol.keepaliveTimeout + WireGuardProtocol.rekeyTimeout
        #expect(p.a.tick(now: 2 * second + quiet - 1).isEmpty)
        #expect(p.a.tick(now: 2 * second + quiet + 334_000_000) == [.sendInitiation(peer: p.peerB, retry: false)])
    }

    @Test func persistentKeepalive() {
        let p = Pair(keepaliveA: 25)
        // Configuring it asks for a keepalive at once; without a session that means a handshake.
        #expect(p.a.tick(now: second / 2) == [.sendKeepalive(peer: p.peerB)])
        #expect(seal(p, fromA: true, [], now: second / 2).0 == .handshakeNeeded)
        #expect(p.a.tick(now: second / 2 + 1) == [.sendInitiation(peer: p.peerB, retry: false)])
        handshake(p, initiatorIsA: true, now: second, wall: second)
        #expect(p.a.tick(now: 25 * second).isEmpty)
        #expect(p.a.tick(now: 26 * second) == [.sendKeepalive(peer: p.peerB)])
        _ = seal(p, fromA: true, [], now: 26 * second)
        #expect(p.a.tick(now: 50 * second).isEmpty)
        #expect(p.a.tick(now: 51 * second) == [.sendKeepalive(peer: p.peerB)])
        // Turning it on later for another peer also asks at once.
        p.b.updatePeer(p.peerA, PeerConfiguration(publicKey: p.a.publicKey, persistentKeepaliveSeconds: 5))
        #expect(p.b.tick(now: 52 * second).contains(.sendKeepalive(peer: p.peerA)))
    }

    @Test func keysZeroedAfterThreeRejectAfterTimes() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        _ = transfer(p, fromA: true, ipv4Packet(40), now: second)
        let end = second + 3 * WireGuardProtocol.rejectAfterTime
        let kp = p.b.peer(p.peerA)!.state.withLock { $0.current }!
        #expect(!p.b.tick(now: end - 1).contains(.keysZeroed(peer: p.peerA)))
        #expect(p.b.tick(now: end).contains(.keysZeroed(peer: p.peerA)))
        let st = p.b.status(of: p.peerA)!
        #expect(!st.hasCurrentKeypair && !st.hasPreviousKeypair && !st.hasNextKeypair)
        #expect(p.b.indexCount == 0)
        // Our test still holds the keypair object; once released its keys are zeroed (deinit).
        #expect(!kp.keys.isZero)
    }

    @Test func lastMinuteHandshakeOnReceive() {
        let p = Pair()
        handshake(p, initiatorIsA: true, now: second, wall: second)
        let late = second + WireGuardProtocol.rejectAfterTime - WireGuardProtocol.keepaliveTimeout
            - WireGuardProtocol.rekeyTimeout + 1
        _ = transfer(p, fromA: true, ipv4Packet(40), now: second)  // confirm B
        _ = transfer(p, fromA: false, ipv4Packet(40), now: second)
        #expect(!p.a.tick(now: late - 1).contains(.sendInitiation(peer: p.peerB, retry: false)))
        _ = transfer(p, fromA: false, ipv4Packet(40), now: late)
        #expect(p.a.tick(now: late).contains(.sendInitiation(peer: p.peerB, retry: false)))
        _ = transfer(p, fromA: false, ipv4Packet(40), now: late + 1)
        #expect(!p.a.tick(now: late + 1).contains(.sendInitiation(peer: p.peerB, retry: false)))
    }
}
