import Core
import Testing
@testable import Packet

private let ms: UInt64 = 1_000_000
private let s: UInt64 = 1_000_000_000

private func withPacket<R>(_ length: Int, fill: UInt8 = 0, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    let bytes = [UInt8](repeating: fill, count: length)
    return bytes.withUnsafeBytes(body)
}

@Suite struct TokenBucketTests {
    @Test func startsFullAndRefillsAtTheRate() {
        var b = TokenBucket(ratePerSecond: 1000, burst: 100, now: 0)
        #expect(b.available(now: 0) == 100)
        do { let ok = b.take(100, now: 0); #expect(ok) }
        do { let ok = b.take(1, now: 0); #expect(!ok) }
        #expect(b.available(now: 10 * ms) == 10)  // 1000/s × 10 ms
        do { let ok = b.take(10, now: 10 * ms); #expect(ok) }
        do { let ok = b.take(1, now: 10 * ms); #expect(!ok) }
        // Never above the burst, however long the gap.
        #expect(b.available(now: 1_000 * s) == 100)
        #expect(b.available(now: .max) == 100)
    }

    @Test func waitIsExactAndNeverEarly() {
        var b = TokenBucket(ratePerSecond: 3, burst: 10, now: 0)
        do { let ok = b.take(10, now: 0); #expect(ok) }
        let w = b.wait(for: 1, now: 0)
        #expect(w == 333_333_334)
        #expect(b.available(now: w - 1) == 0 && b.available(now: w) == 1)
        #expect(b.wait(for: 11, now: 0) == .max)  // above the burst: never
        do { let ok = b.take(11, now: 100 * s); #expect(!ok) }
    }

    @Test func rateOverTimeMatchesUnderManySmallTakes() {
        // 1 MB/s, 1500-byte packets taken as soon as they fit: bytes over 10 s = rate × time + burst.
        var b = TokenBucket(ratePerSecond: 1_000_000, burst: 5_000, now: 0)
        var now: UInt64 = 0
        var taken: UInt64 = 0
        while now <= 10 * s {
            if b.take(1500, now: now) { taken += 1500 } else { now += b.wait(for: 1500, now: now) }
        }
        #expect(taken >= 10_000_000 && taken <= 10_000_000 + 5_000 + 1500)
    }

    @Test func timeGoingBackChangesNothing() {
        var b = TokenBucket(ratePerSecond: 1000, burst: 100, now: 50 * ms)
        do { let ok = b.take(100, now: 50 * ms); #expect(ok) }
        #expect(b.available(now: 10 * ms) == 0)
        do { let ok = b.take(1, now: 10 * ms); #expect(!ok) }
        #expect(b.available(now: 60 * ms) == 10)
    }
}

@Suite struct PacketFIFOTests {
    @Test func fifoOrderAndByteBound() {
        let q = PacketFIFO(limitBytes: 3000, maxPacket: 2048)
        for i in 0..<3 { #expect(withPacket(1000, fill: UInt8(i)) { q.push($0) }) }
        #expect(!withPacket(1, fill: 9) { q.push($0) })  // 3001 > 3000
        #expect(q.count == 3 && q.bytes == 3000 && q.headLength == 1000)
        for i in 0..<3 {
            var got: [UInt8] = []
            #expect(q.pop { got = Array($0) })
            #expect(got == [UInt8](repeating: UInt8(i), count: 1000))
        }
        #expect(!q.pop { _ in } && q.headLength == nil)
    }

    /// Random pushes and pops of random lengths against an array: contents, order and wrap-around.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func randomAgainstArray(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        let q = PacketFIFO(limitBytes: 5000, maxPacket: 1600)
        var model: [[UInt8]] = []
        for step in 0..<20_000 {
            if rng.next() % 100 < 55 {
                let len = Int(rng.next() % 1600)
                let p = (0..<len).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let ok = p.withUnsafeBytes { q.push($0) }
                let fits = model.reduce(0) { $0 + $1.count } + len <= 5000
                if fits { #expect(ok, "step \(step)") }  // the ring always has room within the limit
                if ok { model.append(p) }
            } else {
                var got: [UInt8]? = nil
                q.pop { got = Array($0) }
                #expect(got == model.first, "step \(step)")
                if !model.isEmpty { model.removeFirst() }
            }
            #expect(q.count == model.count && q.bytes == model.reduce(0) { $0 + $1.count })
            #expect(q.headLength == model.first?.count)
        }
    }
}

@Suite struct ShaperTests {
    @Test func geometry() {
        let g10 = Shaper.geometry(bitsPerSecond: 10_000_000)
        #expect(g10.rateBytes == 1_250_000 && g10.burst == 6_250 && g10.queueLimit == 125_000)
        let g1 = Shaper.geometry(bitsPerSecond: 1_000_000)
        #expect(g1.burst == 3_200 && g1.queueLimit == 16 << 10)
        #expect(Shaper.geometry(bitsPerSecond: 10_000_000_000).queueLimit == 8 << 20)
    }

    @Test func unshapedPeersAreNotShaped() {
        let sh = Shaper()
        sh.configure([(1, 8_000_000), (2, nil), (5, 0)], now: 0)
        #expect(sh.isShaped(1) && !sh.isShaped(2) && !sh.isShaped(5) && !sh.isShaped(0) && !sh.isShaped(99))
        #expect(sh.shapedCount == 1)
    }

    @Test func burstPassesThenQueuesThenOverflows() {
        let sh = Shaper()
        sh.configure([(1, 8_000_000)], now: 0)  // 1 MB/s: burst 5000, queue 100 000 bytes
        var offers: [Shaper.Offer] = []
        for _ in 0..<80 { offers.append(withPacket(1500) { sh.offer(1, $0, now: 0) }) }
        #expect(offers.prefix(3).allSatisfy { $0 == .pass })  // 4500 of the 5000-byte burst
        #expect(offers[3] == .queued)
        let queued = offers.filter { $0 == .queued }.count
        #expect(queued == 66)  // 66 × 1500 = 99 000 ≤ 100 000
        #expect(offers.last == .overflow)
        #expect(sh.queuedPackets == 66)
    }

    @Test func releaseKeepsTheRateAndOrder() {
        let sh = Shaper()
        sh.configure([(1, 8_000_000)], now: 0)
        var seq: UInt8 = 0
        var passed = 0
        for _ in 0..<60 {
            if withPacket(1000, fill: seq, { sh.offer(1, $0, now: 0) }) == .pass { passed += 1 }
            seq &+= 1
        }
        #expect(passed == 5)
        var got: [UInt8] = []
        var now: UInt64 = 0
        var times: [UInt64] = []
        while sh.hasQueued {
            now += sh.nextDue(now: now)!
            sh.release(now: now, maxPackets: 64) { peer, p in
                #expect(peer == 1 && p.count == 1000)
                got.append(p[0])
                times.append(now)
            }
        }
        #expect(got == Array(5..<60))  // FIFO
        // 55 000 bytes at 1 MB/s after an empty bucket: the last leaves at 55 ms, not before.
        #expect(times.last == 55 * ms)
        #expect(sh.pollTimeout(now: now, idle: 250) == 250)
    }

    @Test func packetsQueueBehindWaitingOnes() {
        let sh = Shaper()
        sh.configure([(1, 8_000_000)], now: 0)
        #expect(withPacket(4000) { sh.offer(1, $0, now: 0) } == .pass)
        #expect(withPacket(1500) { sh.offer(1, $0, now: 0) } == .queued)
        // 500 bytes fit in the bucket, but a packet waits: this one must not overtake it.
        #expect(withPacket(100) { sh.offer(1, $0, now: 0) } == .queued)
        #expect(sh.pollTimeout(now: 0, idle: 250) == 1)  // 1000 bytes more at 1 MB/s: 1 ms
    }

    @Test func noStarvationBetweenPeers() {
        let sh = Shaper()
        sh.configure((1...4).map { (UInt32($0), UInt64(8_000_000)) }, now: 0)
        for peer in UInt32(1)...4 { for _ in 0..<40 { _ = withPacket(1000) { sh.offer(peer, $0, now: 0) } } }
        // A release budget of 3 packets per call, each call 10 ms later: every peer gets turns.
        var perPeer = [UInt32: Int]()
        var now: UInt64 = 0
        for _ in 0..<20 {
            now += 10 * ms
            sh.release(now: now, maxPackets: 3) { peer, _ in perPeer[peer, default: 0] += 1 }
        }
        #expect(perPeer.count == 4)
        let counts = perPeer.values.sorted()
        #expect(counts.last! - counts.first! <= 1)
    }

    @Test func eachPeerHasItsOwnRate() {
        let sh = Shaper()
        sh.configure([(1, 8_000_000), (2, 80_000_000)], now: 0)
        var bytes = [UInt32: Int]()
        var now: UInt64 = 0
        // Both offered far more than their rate for one second, 1 ms ticks.
        while now < s {
            for peer in UInt32(1)...2 {
                for _ in 0..<20 {
                    if withPacket(1000, { sh.offer(peer, $0, now: now) }) == .pass { bytes[peer, default: 0] += 1000 }
                }
            }
            sh.release(now: now, maxPackets: 1000) { peer, p in bytes[peer, default: 0] += p.count }
            now += ms
        }
        #expect(bytes[1]! >= 1_000_000 && bytes[1]! <= 1_000_000 + 5_000 + 1000)
        #expect(bytes[2]! >= 10_000_000 && bytes[2]! <= 10_000_000 + 50_000 + 1000)
    }

    @Test func totalQueueBudgetIsBounded() {
        let sh = Shaper(totalQueueBytes: 300_000)
        sh.configure((1...10).map { (UInt32($0), UInt64(8_000_000)) }, now: 0)
        for peer in UInt32(1)...10 { for _ in 0..<10 { _ = withPacket(1500) { sh.offer(peer, $0, now: 0) } } }
        #expect(sh.allocatedQueueBytes <= 300_000)
        // Queues had: some peers, not all; the others overflow.
        #expect(withPacket(1500) { sh.offer(10, $0, now: 0) } == .overflow)
    }

    @Test func reconfigureKeepsUnchangedPeersAndFreesRemovedOnes() {
        let sh = Shaper()
        sh.configure([(1, 8_000_000), (2, 8_000_000)], now: 0)
        for _ in 0..<10 { _ = withPacket(1500) { sh.offer(1, $0, now: 0) }; _ = withPacket(1500) { sh.offer(2, $0, now: 0) } }
        let before = sh.queuedPackets
        sh.configure([(1, 8_000_000)], now: 0)
        #expect(sh.isShaped(1) && !sh.isShaped(2))
        #expect(sh.queuedPackets == before / 2)
        #expect(sh.allocatedQueueBytes > 0)
        sh.configure([], now: 0)
        #expect(sh.allocatedQueueBytes == 0 && !sh.hasQueued)
    }

    /// The per-peer limit state at 10,000 peers (printed for the report): shaper entries both
    /// ways and flow caps, without queues (those are only had while a peer's packets wait).
    @Test func memoryAtTenThousandPeers() {
        let up = Shaper(), down = Shaper(), caps = FlowCaps()
        let peers = (1...10_000).map { UInt32($0) }
        up.configure(peers.map { ($0, UInt64(10_000_000)) }, now: 0)
        down.configure(peers.map { ($0, UInt64(10_000_000)) }, now: 0)
        caps.configure(peers.map { ($0, 512, 50) }, now: 0)
        let total = up.memoryBytes + down.memoryBytes + caps.memoryBytes
        print("limit state at 10,000 peers: \(total) bytes (shaper entry \(Shaper.entryBytes) B/dir, caps entry \(FlowCaps.entryBytes) B)")
        #expect(total < 10_000 * 400)
    }
}

@Suite struct FlowCapsTests {
    @Test func newFlowRateWithBurstTwice() {
        let caps = FlowCaps()
        caps.configure([(1, nil, 10)], now: 0)
        var opened = 0
        while caps.mayOpen(1, now: 0) { caps.opened(1, now: 0); opened += 1 }
        #expect(opened == 20)  // burst 2 × 10
        #expect(!caps.mayOpen(1, now: 99 * ms))
        #expect(caps.mayOpen(1, now: 100 * ms))  // one more every 100 ms
        #expect(caps.maxFlows(1) == .max)
    }

    @Test func refusalsAreCoalescedPerSecond() {
        let caps = FlowCaps()
        caps.configure([(1, 5, nil)], now: 0)
        #expect(caps.refused(1, nowMs: 0) == 1)
        for t in 1..<1000 { #expect(caps.refused(1, nowMs: Int64(t)) == nil) }
        #expect(caps.refused(1, nowMs: 1000) == 1000)
        #expect(!caps.isCapped(2))
    }
}
