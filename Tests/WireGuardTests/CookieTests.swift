// The cookie mechanism under load, both roles, and the per-source rate limit.
import Core
import Packet
import Testing
@testable import WireGuard

struct CookieTests {
    @Test func cookieReplyFlowUnderLoad() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        let indicesBefore = p.b.indexCount
        let (r1, _, out1) = deliver(ini, to: p.b, from: endpointA, now: second, underLoad: true)
        #expect(r1 == .sendCookieReply(range: 0..<64))
        #expect(p.b.indexCount == indicesBefore)
        #expect(p.b.status(of: p.peerA)!.endpoint == nil)
        let reply = Array(out1[0..<64])
        #expect(reply[0..<4] == [3, 0, 0, 0])
        #expect(reply[4..<8] == ini[4..<8])
        let (r2, _, _) = deliver(reply, to: p.a, from: endpointB, now: second)
        #expect(r2 == .cookieStored(peer: p.peerB))
        // The retry carries mac2 and gets through while B is still under load.
        let retry = initiation(p, fromA: true, now: 7 * second, wall: 7 * second, retry: true)!
        #expect(retry[132..<148] != [UInt8](repeating: 0, count: 16)[...])
        let (r3, _, out3) = deliver(retry, to: p.b, from: endpointA, now: 7 * second, underLoad: true)
        guard case .sendResponse(_, let range) = r3 else { Issue.record("\(r3)"); return }
        let (r4, _, _) = deliver(Array(out3[range]), to: p.a, from: endpointB, now: 7 * second)
        #expect(r4 == .handshakeComplete(peer: p.peerB))
    }

    @Test func cookieIsBoundToSourceAndExpires() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        let (_, _, out) = deliver(ini, to: p.b, from: endpointA, now: second, underLoad: true)
        _ = deliver(Array(out[0..<64]), to: p.a, from: endpointB, now: second)
        let retry = initiation(p, fromA: true, now: 7 * second, wall: 7 * second)!
        let elsewhere = Endpoint(address: IPAddress("192.0.2.99")!, port: 51820)
        let (r, _, _) = deliver(retry, to: p.b, from: elsewhere, now: 7 * second, underLoad: true)
        #expect(r == .sendCookieReply(range: 0..<64))
        // Past COOKIE_REFRESH_TIME the initiator stops sending mac2.
        let late = initiation(p, fromA: true, now: second + WireGuardProtocol.cookieRefreshTime + 1, wall: 200 * second)!
        #expect(late[132..<148] == [UInt8](repeating: 0, count: 16)[...])
    }

    @Test func cookieReplyToAResponse() {
        // A (initiator) is under load when B's response arrives: A answers with a cookie reply, B
        // stores it, and B's next response carries mac2.
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        let (_, _, out) = deliver(ini, to: p.b, from: endpointA, now: second)
        let response = Array(out[0..<92])
        let (r1, _, out1) = deliver(response, to: p.a, from: endpointB, now: second, underLoad: true)
        #expect(r1 == .sendCookieReply(range: 0..<64))
        let (r2, _, _) = deliver(Array(out1[0..<64]), to: p.b, from: endpointA, now: second)
        #expect(r2 == .cookieStored(peer: p.peerA))
        let ini2 = initiation(p, fromA: true, now: 7 * second, wall: 7 * second)!
        let (_, _, out2) = deliver(ini2, to: p.b, from: endpointA, now: 7 * second)
        let (r3, _, _) = deliver(Array(out2[0..<92]), to: p.a, from: endpointB, now: 7 * second, underLoad: true)
        #expect(r3 == .handshakeComplete(peer: p.peerB))
    }

    @Test func perSourceRateLimitUnderLoad() {
        let p = Pair()
        let ini = initiation(p, fromA: true, now: second, wall: second)!
        let (_, _, out) = deliver(ini, to: p.b, from: endpointA, now: second, underLoad: true)
        _ = deliver(Array(out[0..<64]), to: p.a, from: endpointB, now: second)
        let withMAC2 = initiation(p, fromA: true, now: 7 * second, wall: 7 * second)!
        var results: [ReceiveResult] = []
        for _ in 0..<7 { results.append(deliver(withMAC2, to: p.b, from: endpointA, now: 8 * second, underLoad: true).0) }
        guard case .sendResponse = results[0] else { Issue.record("\(results)"); return }
        #expect(results[1..<5].allSatisfy { $0 == .drop(.replayedTimestamp) })
        #expect(results[5] == .drop(.rateLimited) && results[6] == .drop(.rateLimited))
        // Not under load, the limiter is not consulted.
        #expect(deliver(withMAC2, to: p.b, from: endpointA, now: 8 * second).0 == .drop(.replayedTimestamp))
    }

    @Test func rateLimiterRefillsAtTwentyPerSecond() {
        var limiter = RateLimiter()
        func allow(_ a: IPAddress, now: UInt64) -> Bool { limiter.allow(a, now: now) }
        let a = IPAddress("203.0.113.5")!
        let t: UInt64 = 10 * second
        for _ in 0..<5 { #expect(allow(a, now: t)) }
        #expect(!allow(a, now: t))
        #expect(!allow(a, now: t + second / 20 - 1))
        #expect(allow(a, now: t + second / 20))
        // Another source has its own bucket; IPv6 sources share a bucket per /64.
        #expect(allow(IPAddress("203.0.113.6")!, now: t))
        for _ in 0..<5 { #expect(allow(IPAddress("2001:db8::1")!, now: t)) }
        #expect(!allow(IPAddress("2001:db8::2")!, now: t))
        #expect(allow(IPAddress("2001:db8:0:1::2")!, now: t))
    }
}
