// Three threads on one device pair, as the gateway will run them: no deadlock, nothing lost.
import Core
import Dispatch
import Synchronization
import Testing
@testable import WireGuard

struct ConcurrencyTests {
    @Test func encryptReceiveAndTickConcurrently() {
        let pair = Pair()
        handshake(pair, initiatorIsA: true, now: second, wall: second)
        _ = transfer(pair, fromA: true, ipv4Packet(40), now: second)
        let n = 400
        let delivered = Atomic<Int>(0)
        let sealedByB = Mutex<[[UInt8]]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { role in
            switch role {
            case 0:  // A's TUN thread encrypts; B's UDP thread (here, the same loop) decrypts
                for i in 0..<n {
                    let (r, got) = transfer(pair, fromA: true, ipv4Packet(20 + i % 200), now: 2 * second)
                    if case .data = r, got.count == 20 + i % 200 { delivered.add(1, ordering: .relaxed) }
                }
            case 1:  // B's TUN thread encrypts towards A
                for i in 0..<n {
                    let (_, msg) = seal(pair, fromA: false, ipv4Packet(20 + i % 100), now: 2 * second)
                    sealedByB.withLock { $0.append(msg) }
                }
            default:  // timer thread
                for i in 0..<n {
                    _ = pair.a.tick(now: 2 * second + UInt64(i))
                    _ = pair.b.tick(now: 2 * second + UInt64(i))
                    _ = pair.a.status(of: pair.peerB)
                }
            }
        }
        #expect(delivered.load(ordering: .relaxed) == n)
        var ok = 0
        for msg in sealedByB.withLock({ $0 }) {
            if case .data = deliver(msg, to: pair.a, from: endpointB, now: 3 * second).0 { ok += 1 }
        }
        #expect(ok == n)
        #expect(pair.b.status(of: pair.peerA)!.rxBytes > 0)
    }
}
