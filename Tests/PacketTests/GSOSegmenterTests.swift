import Core
import Testing
@testable import Packet

/// A TCP or UDP packet over IPv4 or IPv6 built slowly from fields (checksums by
/// `TestPackets.slowSum`, independent of `InternetChecksum`), for the offload tests.
struct OffloadPacket {
    var v6 = false
    var tcp = true
    var flow: UInt8 = 1          // varies the source address
    var sport: UInt16 = 40000
    var dport: UInt16 = 443
    var id: UInt16 = 0x1000
    var ttl: UInt8 = 64
    var tos: UInt8 = 0
    var df = true
    var flowLabel: UInt32 = 0x12345
    var seq: UInt32 = 1_000_000
    var ack: UInt32 = 77_777
    var flags: UInt8 = 0x10
    var window: UInt16 = 501
    var options: [UInt8] = []
    var payload: [UInt8] = []
    var corruptChecksum = false
    var udpChecksumZero = false

    var ipHeaderLength: Int { v6 ? 40 : 20 }
    var l4HeaderLength: Int { tcp ? 20 + options.count : 8 }

    var bytes: [UInt8] {
        let be16 = TestPackets.be16, be32 = TestPackets.be32
        let src: [UInt8] = v6 ? [0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, flow] : [10, 0, 0, flow]
        let dst: [UInt8] = v6 ? [0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99, 1] : [192, 168, 7, 9]
        let proto: UInt8 = tcp ? 6 : 17
        let l4Length = l4HeaderLength + payload.count
        var l4: [UInt8]
        if tcp {
            precondition(options.count % 4 == 0)
            l4 = be16(sport) + be16(dport) + be32(seq) + be32(ack) + [UInt8(l4HeaderLength / 4) << 4, flags]
                + be16(window) + [0, 0, 0, 0] + options + payload
        } else {
            l4 = be16(sport) + be16(dport) + be16(UInt16(l4Length)) + [0, 0] + payload
        }
        let pseudo = v6 ? src + dst + be32(UInt32(l4Length)) + [0, 0, 0, proto] : src + dst + [0, proto] + be16(UInt16(l4Length))
        var c = ~TestPackets.slowSum(pseudo + l4)
        if !tcp && c == 0 { c = 0xFFFF }
        if !tcp && udpChecksumZero { c = 0 }
        if corruptChecksum { c ^= 0x0101 }
        let at = tcp ? 16 : 6
        l4[at] = UInt8(c >> 8)
        l4[at + 1] = UInt8(c & 0xFF)
        if v6 {
            return be32(0x6000_0000 | UInt32(tos) << 20 | flowLabel) + be16(UInt16(l4Length)) + [proto, ttl] + src + dst + l4
        }
        var h: [UInt8] = [0x45, tos] + be16(UInt16(20 + l4Length)) + be16(id) + [df ? 0x40 : 0, 0] + [ttl, proto, 0, 0] + src + dst
        let hc = ~TestPackets.slowSum(h)
        h[10] = UInt8(hc >> 8)
        h[11] = UInt8(hc & 0xFF)
        return h + l4
    }

    /// The segments the kernel's GSO would cut from this packet as a super-packet.
    func expectedSegments(gsoSize: Int) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while i * gsoSize < payload.count {
            var s = self
            s.payload = Array(payload[(i * gsoSize)..<min(payload.count, (i + 1) * gsoSize)])
            s.id = id &+ UInt16(truncatingIfNeeded: i)
            s.seq = seq &+ UInt32(i * gsoSize)
            let last = (i + 1) * gsoSize >= payload.count
            if !last { s.flags &= ~0x09 }
            if i > 0 { s.flags &= ~0x80 }
            out.append(s.bytes)
            i += 1
        }
        return out
    }

    static func pattern(_ n: Int, seed: Int = 0) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ $0 >> 8) } }
}

/// Decodes a header from bytes (no typed-throws closure: the 6.3 compiler crashes on those
/// passed to withUnsafeBytes).
func decodeHeader(_ bytes: [UInt8]) -> Result<VirtioNetHeader, OffloadError> {
    bytes.withUnsafeBytes { b in
        do throws(OffloadError) { return .success(try VirtioNetHeader(b)) } catch { return .failure(error) }
    }
}

/// `GSOSegmenter.plan` on bytes.
func planSplit(_ header: VirtioNetHeader, _ packet: [UInt8]) -> Result<GSOSplit, OffloadError> {
    packet.withUnsafeBytes { b in
        do throws(OffloadError) { return .success(try GSOSegmenter.plan(header, packet: b)) } catch { return .failure(error) }
    }
}

/// Runs plan + segment on a byte array; returns the segments or the error.
func splitAll(_ header: VirtioNetHeader, _ packet: [UInt8]) -> Result<[[UInt8]], OffloadError> {
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: packet.count, alignment: 1)  // exact size for bounds
    defer { copy.deallocate() }
    if !packet.isEmpty { copy.copyBytes(from: packet) }
    let bytes = UnsafeRawBufferPointer(copy)
    let split: GSOSplit
    do throws(OffloadError) { split = try GSOSegmenter.plan(header, packet: bytes) } catch { return .failure(error) }
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: split.maxSegmentLength, alignment: 1)
    defer { out.deallocate() }
    var segments: [[UInt8]] = []
    for i in 0..<split.count {
        let n = GSOSegmenter.segment(i, of: split, packet: bytes, into: out)
        precondition(n <= split.maxSegmentLength)
        segments.append(Array(out[0..<n]))
    }
    return .success(segments)
}

@Suite struct GSOSegmenterTests {
    static func gsoHeader(_ p: OffloadPacket, gsoSize: Int) -> VirtioNetHeader {
        let type = p.tcp ? (p.v6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4) : VirtioNetHeader.gsoUDPL4
        return VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, gsoType: type,
                               headerLength: UInt16(p.ipHeaderLength + p.l4HeaderLength), gsoSize: UInt16(gsoSize),
                               checksumStart: UInt16(p.ipHeaderLength), checksumOffset: p.tcp ? 16 : 6)
    }

    /// The super-packet as the kernel hands it over: L4 checksum = folded pseudo-header sum only.
    static func superPacket(_ p: OffloadPacket) -> [UInt8] {
        var b = p.bytes
        b[p.ipHeaderLength + (p.tcp ? 16 : 6)] = 0x5A  // whatever is there is ignored
        return b
    }

    @Test(arguments: [(false, true), (true, true), (false, false), (true, false)])
    func splitsKnownSuperPacket(v6: Bool, tcp: Bool) throws {
        var p = OffloadPacket(v6: v6, tcp: tcp)
        p.id = 0xFFFE  // wraps
        p.seq = 0xFFFF_FC00  // wraps
        p.flags = 0x10 | 0x08 | 0x01 | 0x80  // ACK PSH FIN CWR
        p.options = tcp ? [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2] : []
        p.payload = OffloadPacket.pattern(3 * 1000 + 333)
        let segments = try splitAll(Self.gsoHeader(p, gsoSize: 1000), Self.superPacket(p)).get()
        let expected = p.expectedSegments(gsoSize: 1000)
        #expect(segments.count == 4 && expected.count == 4)
        #expect(segments == expected)
        if tcp {
            let ip = p.ipHeaderLength
            #expect(segments.map { $0[ip + 13] } == [0x90, 0x10, 0x10, 0x19])  // CWR first, PSH|FIN last
        }
        if !v6 { #expect(segments.map { UInt16($0[4]) << 8 | UInt16($0[5]) } == [0xFFFE, 0xFFFF, 0, 1]) }
    }

    @Test func ecnFlagIsAcceptedForTCP() throws {
        var p = OffloadPacket()
        p.payload = OffloadPacket.pattern(2800)
        var h = Self.gsoHeader(p, gsoSize: 1400)
        h.gsoType |= VirtioNetHeader.gsoECN
        #expect(try splitAll(h, Self.superPacket(p)).get() == p.expectedSegments(gsoSize: 1400))
    }

    @Test func payloadNoLongerThanSegmentSizeGivesOneSegment() throws {
        var p = OffloadPacket(v6: true, tcp: false)
        p.payload = OffloadPacket.pattern(700)
        let h = Self.gsoHeader(p, gsoSize: 1200)
        let split = try planSplit(h, p.bytes).get()
        #expect(split.count == 1 && split.maxSegmentLength == 48 + 700)
        #expect(try splitAll(h, p.bytes).get() == [p.bytes])
    }

    @Test func plainPacketIsCopied() throws {
        let p = OffloadPacket(payload: [1, 2, 3]).bytes
        #expect(try splitAll(VirtioNetHeader(), p).get() == [p])
        #expect(try splitAll(VirtioNetHeader(), []).get() == [[]])
    }

    @Test(arguments: [(false, true), (true, true), (false, false), (true, false)])
    func completesPartialChecksum(v6: Bool, tcp: Bool) throws {
        var p = OffloadPacket(v6: v6, tcp: tcp)
        p.payload = OffloadPacket.pattern(101, seed: 5)
        let valid = p.bytes
        var partial = valid
        let ip = p.ipHeaderLength, at = ip + (tcp ? 16 : 6)
        // What a NEEDS_CSUM read holds: the folded pseudo-header sum, not complemented.
        let l4 = valid.count - ip
        let pseudo = v6 ? Array(valid[8..<40]) + TestPackets.be32(UInt32(l4)) + [0, 0, 0, tcp ? 6 : 17]
                        : Array(valid[12..<20]) + [0, tcp ? 6 : 17] + TestPackets.be16(UInt16(l4))
        let ps = TestPackets.slowSum(pseudo)
        partial[at] = UInt8(ps >> 8)
        partial[at + 1] = UInt8(ps & 0xFF)
        let h = VirtioNetHeader(flags: VirtioNetHeader.needsChecksum, gsoType: 0, headerLength: 0, gsoSize: 0,
                                checksumStart: UInt16(ip), checksumOffset: tcp ? 16 : 6)
        let out = try splitAll(h, partial).get()
        #expect(out == [valid])
        #expect(TestPackets.slowSum(pseudo + Array(out[0][ip...])) == 0xFFFF)
        // In place: the same bytes, no copy.
        var inPlace = partial
        let finished = try inPlace.withUnsafeMutableBytes { b in
            try GSOSegmenter.finishInPlace(GSOSegmenter.plan(h, packet: UnsafeRawBufferPointer(b)), packet: b)
        }
        #expect(finished && inPlace == valid)
    }

    @Test func finishInPlaceLeavesPlainPacketsAndRefusesSuperPackets() throws {
        var p = OffloadPacket(tcp: true)
        p.payload = OffloadPacket.pattern(3000, seed: 2)
        var bytes = p.bytes
        let original = bytes
        try bytes.withUnsafeMutableBytes { b in
            let plain = try GSOSegmenter.plan(VirtioNetHeader(), packet: UnsafeRawBufferPointer(b))
            #expect(GSOSegmenter.finishInPlace(plain, packet: b))
            let gso = try GSOSegmenter.plan(Self.gsoHeader(p, gsoSize: 1000), packet: UnsafeRawBufferPointer(b))
            #expect(gso.count == 3 && !GSOSegmenter.finishInPlace(gso, packet: b))
        }
        #expect(bytes == original)
    }

    @Test func udpChecksumOfZeroIsSentAsAllOnes() throws {
        // A UDP datagram whose data make the sum come out 0: the field must read 0xFFFF.
        var p = OffloadPacket(tcp: false)
        p.payload = [0, 0]
        var b = p.bytes
        let ip = 20
        b[ip + 6] = 0; b[ip + 7] = 0
        // Choose the two payload bytes so that pseudo + header + payload folds to 0xFFFF.
        let l4 = b.count - ip
        let pseudo = Array(b[12..<20]) + [0, 17] + TestPackets.be16(UInt16(l4))
        let rest = TestPackets.slowSum(pseudo + Array(b[ip...]))
        let fill = ~rest  // adding this word makes the fold 0xFFFF
        b[ip + 8] = UInt8(fill >> 8); b[ip + 9] = UInt8(fill & 0xFF)
        #expect(TestPackets.slowSum(pseudo + Array(b[ip...])) == 0xFFFF)
        var partial = b
        let ps = TestPackets.slowSum(pseudo)
        partial[ip + 6] = UInt8(ps >> 8); partial[ip + 7] = UInt8(ps & 0xFF)
        let h = VirtioNetHeader(flags: 1, gsoType: 0, headerLength: 0, gsoSize: 0, checksumStart: 20, checksumOffset: 6)
        let out = try splitAll(h, partial).get()[0]
        #expect(out[ip + 6] == 0xFF && out[ip + 7] == 0xFF)
        // The same through USO.
        let seg = try splitAll(Self.gsoHeader(p, gsoSize: 100), b).get()[0]
        #expect(seg[ip + 6] == 0xFF && seg[ip + 7] == 0xFF)
    }

    @Test func checksumPositionOutOfRange() {
        let p = OffloadPacket(payload: [1, 2]).bytes  // 42 bytes
        for (start, offset) in [(20, 16), (40, 1), (41, 0), (0, 41), (65535, 65535)] as [(UInt16, UInt16)] {
            let h = VirtioNetHeader(flags: 1, gsoType: 0, headerLength: 0, gsoSize: 0, checksumStart: start, checksumOffset: offset)
            let ok = Int(start) + Int(offset) + 2 <= p.count
            if ok { #expect((try? splitAll(h, p).get()) != nil) } else { #expect(splitAll(h, p) == .failure(.checksumOutOfRange)) }
        }
    }

    /// Every prefix of a valid super-packet: an error, or segments that together carry exactly
    /// the prefix's payload — never a crash (the buffer is exactly sized, so a read past it would
    /// be caught under ASan in the fuzzer).
    @Test(arguments: [(false, true), (true, true), (false, false), (true, false)])
    func everyTruncation(v6: Bool, tcp: Bool) {
        var p = OffloadPacket(v6: v6, tcp: tcp)
        p.payload = OffloadPacket.pattern(250)
        let full = Self.superPacket(p)
        let h = Self.gsoHeader(p, gsoSize: 100)
        let hl = p.ipHeaderLength + p.l4HeaderLength
        for n in 0..<full.count {
            switch splitAll(h, Array(full[0..<n])) {
            case .failure(let e):
                #expect(n <= hl, "prefix \(n) failed with \(e)")
                #expect(e == .truncatedPacket || e == .headerMismatch("GSO packet without payload"))
            case .success(let segs):
                #expect(n > hl)
                #expect(segs.flatMap { $0[hl...] } == Array(full[hl..<n]))
            }
        }
    }

    @Test func malformedFields() {
        var p = OffloadPacket()
        p.payload = OffloadPacket.pattern(300)
        let good = p.bytes
        let h = Self.gsoHeader(p, gsoSize: 100)
        func with(_ change: (inout [UInt8]) -> Void) -> [UInt8] { var b = good; change(&b); return b }
        func header(_ change: (inout VirtioNetHeader) -> Void) -> VirtioNetHeader { var x = h; change(&x); return x }
        var v6 = OffloadPacket(v6: true)
        v6.payload = OffloadPacket.pattern(300)
        var udp = OffloadPacket(tcp: false)
        udp.payload = OffloadPacket.pattern(129)
        var v6ext = v6.bytes
        v6ext[6] = 0  // hop-by-hop
        let cases: [(String, VirtioNetHeader, [UInt8], OffloadError)] = [
            ("UFO", header { $0.gsoType = VirtioNetHeader.gsoUDP }, good, .unsupportedGSOType(3)),
            ("unknown type", header { $0.gsoType = 2 }, good, .unsupportedGSOType(2)),
            ("ECN on UDP_L4", header { $0.gsoType = 0x85 }, good, .unsupportedGSOType(0x85)),
            ("ECN without GSO", header { $0.gsoType = 0x80 }, good, .unsupportedGSOType(0x80)),
            ("gso_size 0", header { $0.gsoSize = 0 }, good, .zeroSegmentSize),
            ("TCPv6 on IPv4", header { $0.gsoType = VirtioNetHeader.gsoTCPv6 }, good, .headerMismatch("gso_type TCPv6 on an IPv4 packet")),
            ("TCPv4 on IPv6", h, v6.bytes, .headerMismatch("gso_type TCPv4 on an IPv6 packet")),
            ("UDP_L4 on TCP", header { $0.gsoType = VirtioNetHeader.gsoUDPL4 }, good, .headerMismatch("IPv4 protocol is not UDP")),
            ("not TCP", h, with { $0[9] = 17 }, .headerMismatch("IPv4 protocol is not TCP")),
            ("fragment", h, with { $0[6] |= 0x20 }, .headerMismatch("IPv4 fragment")),
            ("IHL 4", h, with { $0[0] = 0x44 }, .headerMismatch("IPv4 header length below 20")),
            ("version 5", h, with { $0[0] = 0x55 }, .headerMismatch("IP version is neither 4 nor 6")),
            ("data offset 4", h, with { $0[32] = 0x40 }, .headerMismatch("TCP data offset below 5")),
            ("IHL past end", h, Array(with { $0[0] = 0x4F }[0..<50]), .truncatedPacket),
            ("IPv6 extension header", header { $0.gsoType = VirtioNetHeader.gsoTCPv6 }, v6ext,
             .headerMismatch("IPv6 next header is not TCP (extension headers unsupported)")),
            ("no payload", h, Array(good[0..<40]), .headerMismatch("GSO packet without payload")),
            ("UDP 129 segments", Self.gsoHeader(udp, gsoSize: 1), udp.bytes, .tooManySegments),
        ]
        for (name, hdr, bytes, error) in cases {
            #expect(splitAll(hdr, bytes) == .failure(error), "\(name)")
        }
        // TCP: 1536 one-byte segments are fine, 1537 are too many.
        p.payload = OffloadPacket.pattern(GSOSegmenter.maxTCPSegments)
        #expect((try? splitAll(Self.gsoHeader(p, gsoSize: 1), p.bytes).get().count) == GSOSegmenter.maxTCPSegments)
        p.payload.append(1)
        #expect(splitAll(Self.gsoHeader(p, gsoSize: 1), p.bytes) == .failure(.tooManySegments))
        udp.payload = OffloadPacket.pattern(128)
        #expect((try? splitAll(Self.gsoHeader(udp, gsoSize: 1), udp.bytes).get().count) == 128)
    }

    /// The fast sum (with and without copying) against the slow reference, every length 0...80
    /// and random longer ones, at every alignment.
    @Test func fastSumMatchesSlowSum() {
        var rng = SplitMix(seed: 1071)
        for n in Array(0...80) + (0..<40).map({ _ in Int(rng.next() % 3000) }) {
            let bytes = (0..<(n + 8)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            for align in 0..<8 {
                let data = Array(bytes[align..<(align + n)])
                let expected = TestPackets.slowSum(data)
                var copy = [UInt8](repeating: 0, count: n + 8)
                let (plain, copied) = bytes.withUnsafeBytes { b in
                    copy.withUnsafeMutableBytes { d in
                        (GSOSegmenter.sum(b.baseAddress! + align, count: n),
                         GSOSegmenter.sum(b.baseAddress! + align, count: n, copyingTo: d.baseAddress! + 1))
                    }
                }
                // 0 and 0xFFFF are the same number in ones' complement; the slow sum never gives 0 for nonzero data.
                #expect(plain == expected || (plain == 0 && expected == 0xFFFF) || (plain == 0xFFFF && expected == 0), "n \(n) align \(align)")
                #expect(copied == plain)
                #expect(Array(copy[1..<(n + 1)]) == data && copy[0] == 0 && copy[(n + 1)...].allSatisfy { $0 == 0 })
            }
        }
    }
}
