import Core
import Testing
@testable import Packet

/// One `coalesce` call on byte arrays, with everything it produced.
struct CoalesceRun {
    var groups: [[Int]] = []
    var headers: [VirtioNetHeader] = []
    var skips: [Int] = []
    var packets: [[UInt8]] = []  // after the in-place rewrite
    /// Per group, exactly what the TUN writev would carry: header, first member, later members from skip.
    var wire: [[UInt8]] = []

    init(_ c: TUNCoalescer, _ input: [[UInt8]], allowTCP: Bool = true, allowUDP: Bool = true) {
        let buffers = input.map { p -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: p.count, alignment: 1)
            b.copyBytes(from: p)
            return b
        }
        defer { buffers.forEach { $0.deallocate() } }
        let n = buffers.withUnsafeBufferPointer { c.coalesce($0.baseAddress!, count: $0.count, allowTCP: allowTCP, allowUDP: allowUDP) }
        packets = buffers.map { Array($0) }
        for g in 0..<n {
            let m = c.members(ofGroup: g).map { Int($0) }
            let h = c.header(ofGroup: g)
            groups.append(m)
            headers.append(h)
            skips.append(c.skip(ofGroup: g))
            var bytes = [UInt8](repeating: 0, count: VirtioNetHeader.size)
            bytes.withUnsafeMutableBytes { h.write(to: $0.baseAddress!) }
            bytes += packets[m[0]]
            for k in m.dropFirst() { bytes += packets[k][c.skip(ofGroup: g)...] }
            wire.append(bytes)
        }
    }

    /// Each group's wire bytes split back by `GSOSegmenter`.
    var resegmented: [[[UInt8]]] {
        wire.map { w in
            let h = try! decodeHeader(w).get()
            return try! splitAll(h, Array(w[VirtioNetHeader.size...])).get()
        }
    }
}

@Suite struct TUNCoalescerTests {
    /// `n` back-to-back full-sized segments of one flow.
    static func flow(_ n: Int, v6: Bool = false, tcp: Bool = true, payload: Int = 1000, flow: UInt8 = 1) -> [OffloadPacket] {
        (0..<n).map { i in
            var p = OffloadPacket(v6: v6, tcp: tcp, flow: flow)
            p.id = 0xFFF0 &+ UInt16(i)
            p.seq = 0xFFFF_F000 &+ UInt32(i * payload)
            p.payload = OffloadPacket.pattern(payload, seed: i + Int(flow) * 100)
            return p
        }
    }

    static func groups(_ packets: [OffloadPacket], allowTCP: Bool = true, allowUDP: Bool = true, capacity: Int = 128)
        -> [[Int]]
    {
        CoalesceRun(TUNCoalescer(capacity: capacity), packets.map(\.bytes), allowTCP: allowTCP, allowUDP: allowUDP).groups
    }

    @Test(arguments: [(false, true), (true, true), (false, false), (true, false)])
    func coalescesOneFlowAndSplitsBack(v6: Bool, tcp: Bool) {
        var ps = Self.flow(5, v6: v6, tcp: tcp)
        if tcp { ps[4].flags = 0x18 }  // PSH on the last
        ps[4].payload = Array(ps[4].payload[0..<300])  // shorter last
        let input = ps.map(\.bytes)
        let run = CoalesceRun(TUNCoalescer(capacity: 8), input)
        #expect(run.groups == [[0, 1, 2, 3, 4]])
        let ip = v6 ? 40 : 20, hl = ip + (tcp ? 20 : 8)
        #expect(run.headers[0] == VirtioNetHeader(
            flags: VirtioNetHeader.needsChecksum,
            gsoType: tcp ? (v6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4) : VirtioNetHeader.gsoUDPL4,
            headerLength: UInt16(hl), gsoSize: 1000, checksumStart: UInt16(ip), checksumOffset: tcp ? 16 : 6))
        #expect(run.skips == [hl])
        // The rewritten first packet: lengths, PSH, and the folded pseudo-header sum.
        let first = run.packets[0]
        let total = hl + 4300
        if v6 {
            #expect(Int(first[4]) << 8 | Int(first[5]) == total - 40)
        } else {
            #expect(Int(first[2]) << 8 | Int(first[3]) == total)
            #expect(TestPackets.slowSum(Array(first[0..<20])) == 0xFFFF)
        }
        let proto: UInt8 = tcp ? 6 : 17
        let pseudo = v6 ? Array(first[8..<40]) + TestPackets.be32(UInt32(total - ip)) + [0, 0, 0, proto]
                        : Array(first[12..<20]) + [0, proto] + TestPackets.be16(UInt16(total - ip))
        let at = ip + (tcp ? 16 : 6)
        #expect(UInt16(first[at]) << 8 | UInt16(first[at + 1]) == TestPackets.slowSum(pseudo))
        // The kernel's view: completing the checksum from csum_start gives a super-packet that verifies.
        #expect(run.wire[0].count == 10 + total)
        var l4 = Array(run.wire[0][(10 + ip)...])
        let completed = ~TestPackets.slowSum(l4)
        l4[at - ip] = UInt8(completed >> 8); l4[at - ip + 1] = UInt8(completed & 0xFF)
        #expect(TestPackets.slowSum(pseudo + l4) == 0xFFFF)
        if tcp { #expect(first[ip + 13] == 0x18) } else { #expect(Int(first[ip + 4]) << 8 | Int(first[ip + 5]) == total - ip) }
        // Members other than the first are untouched.
        #expect(Array(run.packets[1...]) == Array(input[1...]))
        #expect(run.resegmented == [input])
    }

    /// Rules that end a group: each case breaks one at packet 2 of four and says the groups.
    @Test func eachRuleThatBreaksAGroup() {
        typealias Change = (inout [OffloadPacket]) -> Void
        let cases: [(String, Change, [[Int]])] = [
            ("different ack", { for i in 2...3 { $0[i].ack += 1 } }, [[0, 1], [2, 3]]),
            ("different window", { for i in 2...3 { $0[i].window += 1 } }, [[0, 1], [2, 3]]),
            ("different TTL", { for i in 2...3 { $0[i].ttl = 63 } }, [[0, 1], [2, 3]]),
            ("different TOS", { for i in 2...3 { $0[i].tos = 4 } }, [[0, 1], [2, 3]]),
            ("DF differs", { for i in 2...3 { $0[i].df = false } }, [[0, 1], [2, 3]]),
            ("gap in seq", { for i in 2...3 { $0[i].seq += 1 } }, [[0, 1], [2, 3]]),
            ("PSH in the middle", { $0[1].flags = 0x18 }, [[0, 1], [2, 3]]),
            ("shorter middle packet", { $0[1].payload.removeLast() }, [[0, 1], [2, 3]]),
            ("longer later packet", { for i in 2...3 { $0[i].payload.append(9); $0[i].seq += UInt32(i - 2) } }, [[0, 1], [2, 3]]),
            ("bad checksum", { $0[2].corruptChecksum = true }, [[0, 1], [2], [3]]),
            ("options differ", { for i in 2...3 { $0[i].options = [1, 1, 1, 1] } }, [[0, 1], [2, 3]]),
            ("options bytes differ", {
                for i in 0...3 { $0[i].options = [1, 1, 8, 10, 0, 0, 0, UInt8(i < 2 ? 1 : 2), 0, 0, 0, 0] }
            }, [[0, 1], [2, 3]]),
            ("ID not consecutive", { for i in 2...3 { $0[i].id &+= 7 } }, [[0, 1], [2, 3]]),
            ("SYN/FIN/RST/URG/ECE/CWR flags", { $0[2].flags = 0x11 }, [[0, 1], [2], [3]]),
            ("no payload", { $0[2].payload = []; for i in 3...3 { $0[i].seq -= 1000 } }, [[0, 1], [2], [3]]),
        ]
        for (name, change, expected) in cases {
            var ps = Self.flow(4)
            change(&ps)
            #expect(Self.groups(ps) == expected, "\(name)")
            // Whatever the groups, splitting them back gives the packets.
            let run = CoalesceRun(TUNCoalescer(capacity: 4), ps.map(\.bytes))
            #expect(run.resegmented == run.groups.map { $0.map { ps[$0].bytes } }, "\(name)")
        }
        // Other flags on the first packet keep it single.
        for flags: UInt8 in [0x11, 0x12, 0x14, 0x30, 0x50, 0x90, 0x00] {
            var ps = Self.flow(3)
            ps[0].flags = flags
            #expect(Self.groups(ps) == [[0], [1, 2]], "flags \(flags)")
        }
    }

    @Test func ipv6FieldsMustMatch() {
        var ps = Self.flow(4, v6: true)
        for i in 2...3 { ps[i].flowLabel = 7 }
        #expect(Self.groups(ps) == [[0, 1], [2, 3]])
        ps = Self.flow(4, v6: true)
        for i in 2...3 { ps[i].ttl = 1 }  // hop limit
        #expect(Self.groups(ps) == [[0, 1], [2, 3]])
        ps = Self.flow(4, v6: true)
        for i in 2...3 { ps[i].tos = 0x10 }  // traffic class
        #expect(Self.groups(ps) == [[0, 1], [2, 3]])
    }

    @Test func ipv4OptionsAndFragmentsAreNeverCoalesced() {
        // A first fragment (MF) of the flow: single, and it ends the group (IHL > 5: see TUNCoalescer.parse).
        var ps = Self.flow(4).map(\.bytes)
        ps[1][6] |= 0x20  // MF
        ps[1][10] = 0; ps[1][11] = 0
        let c = ~TestPackets.slowSum(Array(ps[1][0..<20]))
        ps[1][10] = UInt8(c >> 8); ps[1][11] = UInt8(c & 0xFF)
        #expect(CoalesceRun(TUNCoalescer(capacity: 4), ps).groups == [[0], [1], [2, 3]])
    }

    @Test func interleavedFlowsEachCoalesce() {
        let a = Self.flow(3, flow: 1), b = Self.flow(3, v6: true, flow: 2), u = Self.flow(3, tcp: false, flow: 3)
        let batch = [a[0], b[0], u[0], a[1], b[1], u[1], a[2], b[2], u[2]]
        let run = CoalesceRun(TUNCoalescer(capacity: 16), batch.map(\.bytes))
        #expect(run.groups == [[0, 3, 6], [1, 4, 7], [2, 5, 8]])
        #expect(run.resegmented == [a.map(\.bytes), b.map(\.bytes), u.map(\.bytes)])
        // Same addresses, other port: another flow.
        var d = Self.flow(2, flow: 1)
        for i in 0..<2 { d[i].sport = 1 }
        #expect(Self.groups([a[0], d[0], a[1], d[1]]) == [[0, 2], [1, 3]])
    }

    @Test func neverMovesAPacketPastAnEarlierOneOfItsFlow() {
        // A1 cannot join (other ack); A2 could join A0's group by every field but would overtake A1.
        var ps = Self.flow(3)
        ps[1].ack += 1
        ps[2].seq = ps[1].seq
        #expect(Self.groups(ps) == [[0], [1], [2]])
        // A non-candidate (bad checksum) of the flow between them.
        ps = Self.flow(3)
        var bad = ps[1]
        bad.corruptChecksum = true
        #expect(Self.groups([ps[0], bad, ps[1]]) == [[0], [1], [2]])
        // A TCP packet whose ports cannot be seen (IPv4 later fragment) closes every group.
        let frag = TestPackets.ipv4(proto: 6, src: "10.0.0.1", dst: "192.168.7.9", payload: [1, 2, 3, 4, 5, 6, 7, 8], fragOffset: 8)
        var run = CoalesceRun(TUNCoalescer(capacity: 4), [ps[0].bytes, frag, ps[1].bytes])
        #expect(run.groups == [[0], [1], [2]])
        // An ICMP packet belongs to no TCP flow: the group goes on around it.
        let icmp = TestPackets.ipv4(proto: 1, src: "10.0.0.1", dst: "192.168.7.9", payload: TestPackets.icmp(type: 8))
        run = CoalesceRun(TUNCoalescer(capacity: 4), [ps[0].bytes, icmp, ps[1].bytes])
        #expect(run.groups == [[0, 2], [1]])
        #expect(run.packets[1] == icmp)
    }

    @Test func memberAndLengthCaps() {
        let many = Self.flow(70, payload: 100)
        #expect(Self.groups(many) == [Array(0..<64), Array(64..<70)])
        // 20 + 20 + 46 × 1400 = 64440 fits; a 47th segment would make 65840.
        let big = Self.flow(50, payload: 1400)
        let run = CoalesceRun(TUNCoalescer(capacity: 64), big.map(\.bytes))
        #expect(run.groups == [Array(0..<46), Array(46..<50)])
        #expect(run.resegmented == [Array(big[0..<46]).map(\.bytes), Array(big[46..<50]).map(\.bytes)])
        let v6 = Self.flow(50, v6: true, tcp: false, payload: 1400)
        #expect(Self.groups(v6).map(\.count) == [46, 4])  // 40 + 8 + 46 × 1400 = 64448
    }

    @Test func udpRules() {
        let u = Self.flow(4, tcp: false)
        #expect(Self.groups(u) == [[0, 1, 2, 3]])
        #expect(Self.groups(u, allowUDP: false) == [[0], [1], [2], [3]])
        var z = u
        z[1].udpChecksumZero = true  // IPv4 "no checksum": never coalesced
        #expect(Self.groups(z) == [[0], [1], [2, 3]])
        var s = u
        s[2].payload.removeLast(500)  // a shorter one ends the group
        #expect(Self.groups(s) == [[0, 1, 2], [3]])
        var bad = u
        bad[3].corruptChecksum = true
        #expect(Self.groups(bad) == [[0, 1, 2], [3]])
        var id = u
        id[2].id &+= 2; id[3].id &+= 2
        #expect(Self.groups(id) == [[0, 1], [2, 3]])
        // With UDP off, TCP still coalesces around it.
        let t = Self.flow(2, flow: 9)
        #expect(Self.groups([t[0], u[0], t[1], u[1]], allowUDP: false) == [[0, 2], [1], [3]])
        // With TCP off (no TSO negotiated), UDP still coalesces around it; with both off, nothing.
        #expect(Self.groups([t[0], u[0], t[1], u[1]], allowTCP: false) == [[0], [1, 3], [2]])
        #expect(Self.groups([t[0], u[0], t[1], u[1]], allowTCP: false, allowUDP: false) == [[0], [1], [2], [3]])
        let run = CoalesceRun(TUNCoalescer(capacity: 8), [t[0], t[1]].map(\.bytes), allowTCP: false)
        #expect(run.headers == [VirtioNetHeader(), VirtioNetHeader()] && run.packets == [t[0], t[1]].map(\.bytes))
    }

    @Test func singlePacketsAreUntouchedAndGarbageIsHarmless() {
        let garbage: [[UInt8]] = [[], [0x45], [0x60, 0, 0], Array(repeating: 0xFF, count: 60), Array(repeating: 0x45, count: 20),
                                  Array(repeating: 0x65, count: 41)]
        let run = CoalesceRun(TUNCoalescer(capacity: 8), garbage)
        #expect(run.groups == garbage.indices.map { [$0] })
        #expect(run.packets == garbage)
        #expect(run.headers.allSatisfy { $0 == VirtioNetHeader() })
        #expect(CoalesceRun(TUNCoalescer(capacity: 1), []).groups.isEmpty)
    }

    /// Random batches from a few flows against the slow model: every group, written as the
    /// writev would and split by GSOSegmenter, gives back exactly its packets; flows keep their
    /// order; every packet is in exactly one group; multi-member groups obey the rules.
    @Test func randomRoundTrip() {
        var rng = SplitMix(seed: 0x6F66_666C)
        let coalescer = TUNCoalescer(capacity: 96)
        var merged = 0
        for _ in 0..<300 {
            struct Flow { var p: OffloadPacket; var mss: Int }
            var flows: [Flow] = (0..<(1 + Int(rng.next() % 5))).map { f in
                var p = OffloadPacket(v6: rng.next() % 2 == 0, tcp: rng.next() % 3 != 0, flow: UInt8(f + 1))
                p.id = UInt16(truncatingIfNeeded: rng.next())
                p.seq = UInt32(truncatingIfNeeded: rng.next())
                p.options = rng.next() % 3 == 0 ? [1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8] : []
                return Flow(p: p, mss: 1 + Int(rng.next() % 1400))
            }
            var batch: [OffloadPacket] = []
            var flowOf: [Int] = []
            for _ in 0..<(1 + Int(rng.next() % 96)) {
                let f = Int(rng.next() % UInt64(flows.count))
                var p = flows[f].p
                p.flags = 0x10
                p.corruptChecksum = false
                p.udpChecksumZero = false
                var length = flows[f].mss
                switch rng.next() % 100 {
                case 0..<8: length = 1 + Int(rng.next() % UInt64(flows[f].mss))
                case 8..<13: p.flags = 0x18
                case 13..<17: p.ack &+= 1; flows[f].p.ack = p.ack
                case 17..<20: p.corruptChecksum = true
                case 20..<23: p.flags = [0x11, 0x12, 0x14, 0x19, 0x50][Int(rng.next() % 5)]
                case 23..<26: p.id &+= 9
                case 26..<28: p.seq &+= 5
                case 28..<30: length += 1 + Int(rng.next() % 50)
                case 30..<32: p.udpChecksumZero = !p.v6 && !p.tcp
                case 32..<34: p.window &+= 1; flows[f].p.window = p.window
                default: break
                }
                p.payload = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                batch.append(p)
                flowOf.append(f)
                flows[f].p.id = p.id &+ 1
                flows[f].p.seq = p.seq &+ UInt32(length)
            }
            let input = batch.map(\.bytes)
            let run = CoalesceRun(coalescer, input, allowUDP: rng.next() % 4 != 0)
            #expect(run.groups.flatMap { $0 }.sorted() == Array(input.indices))
            #expect(run.groups.map { $0[0] } == run.groups.map { $0[0] }.sorted())
            for f in flows.indices {
                let order = run.groups.flatMap { $0 }.filter { flowOf[$0] == f }
                #expect(order == order.sorted(), "flow \(f) reordered")
            }
            for g in run.groups where g.count > 1 {
                #expect(g.count <= TUNCoalescer.maxMembers)
                #expect(g.allSatisfy { !batch[$0].corruptChecksum && !batch[$0].udpChecksumZero && flowOf[$0] == flowOf[g[0]] })
                #expect(g.dropLast().allSatisfy { batch[$0].payload.count == batch[g[0]].payload.count && (!batch[$0].tcp || batch[$0].flags == 0x10) })
                merged += g.count - 1
            }
            let back = run.resegmented
            for (k, g) in run.groups.enumerated() {
                #expect(back[k] == g.map { input[$0] }, "group \(g)")
            }
        }
        #expect(merged > 1000)  // the generator does exercise coalescing
    }
}
