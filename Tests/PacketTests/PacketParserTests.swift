import Core
import Testing
@testable import Packet

func parse(_ bytes: [UInt8]) -> Result<ParsedPacket, PacketError> {
    bytes.withUnsafeBytes { p in Result { () throws(PacketError) in try PacketParser.parse(p) } }
}

func parsed(_ bytes: [UInt8]) throws -> ParsedPacket { try parse(bytes).get() }

func parseError(_ bytes: [UInt8]) -> PacketError? {
    if case .failure(let e) = parse(bytes) { return e }
    return nil
}

@Suite struct PacketParserTests {
    typealias T = TestPackets

    @Test func ipv4TCPSyn() throws {
        let bytes = T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10",
                           payload: T.tcp(sport: 40000, dport: 443, seq: 7, flags: .syn, options: [2, 4, 5, 0xB4]))
        let p = try parsed(bytes)
        #expect(p.version == 4)
        #expect(p.source == IPAddress("10.99.0.2"))
        #expect(p.destination == IPAddress("192.0.2.10"))
        #expect(p.proto == .tcp)
        #expect(p.sourcePort == 40000 && p.destinationPort == 443)
        #expect(p.tcpFlags == .syn && p.tcpSequence == 7 && p.tcpAcknowledgment == 0)
        #expect(p.transportOffset == 20 && p.payloadOffset == 44 && p.totalLength == 44 && p.payloadLength == 0)
        #expect(p.hasTransportHeader && !p.fragment.isFragment)
        #expect(p.ttl == 64)
    }

    /// A Linux-style ping (84 bytes, id 7, seq 1, timestamp and 0x10... pattern), written out as
    /// hex; its two checksums were computed offline with an independent script.
    @Test func knownICMPEcho() throws {
        let hex = "450000540000400040012c990a00020f0101010108001a0000070001"
            + "f9c2696500000000b1fc0a0000000000101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637"
        var bytes: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() { bytes.append(UInt8(String([a, b]), radix: 16)!) }
        let p = try parsed(bytes)
        #expect(p.proto == .icmp && p.icmpType == 8 && p.icmpCode == 0 && p.icmpIdentifier == 7)
        #expect(p.source == IPAddress("10.0.2.15") && p.destination == IPAddress("1.1.1.1"))
        #expect(p.totalLength == 84 && p.payloadOffset == 28)
        bytes.withUnsafeBytes { b in
            #expect(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: b[0..<20])) == 0)
            #expect(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: b[20..<84])) == 0)
        }
    }

    @Test func ipv4OptionsAndPadding() throws {
        let bytes = T.ipv4(proto: 17, src: "10.99.0.2", dst: "8.8.8.8", payload: T.udp(sport: 5353, dport: 53, data: [1, 2, 3]),
                           options: [0x94, 4, 0, 0])
        let p = try parsed(bytes + [0, 0, 0, 0, 0, 0])  // link padding after the packet
        #expect(p.transportOffset == 24 && p.payloadOffset == 32 && p.totalLength == 35)
        #expect(p.sourcePort == 5353 && p.destinationPort == 53)
    }

    @Test func ipv4Fragments() throws {
        let first = try parsed(T.ipv4(proto: 17, src: "10.0.0.1", dst: "10.0.0.2",
                                      payload: T.udp(sport: 1, dport: 2, data: [UInt8](repeating: 7, count: 16)) + [9],
                                      id: 77, moreFragments: true))
        #expect(first.fragment == FragmentInfo(identification: 77, offset: 0, moreFragments: true))
        #expect(first.hasTransportHeader && first.sourcePort == 1 && first.destinationPort == 2)
        let later = try parsed(T.ipv4(proto: 6, src: "10.0.0.1", dst: "10.0.0.2", payload: [1, 2, 3], id: 77, fragOffset: 1480))
        #expect(later.fragment == FragmentInfo(identification: 77, offset: 1480, moreFragments: false))
        #expect(!later.hasTransportHeader && later.sourcePort == 0 && later.payloadOffset == 20)
        #expect(later.fragment.isLaterFragment)
        // Offset 65528 + 8 bytes of data runs past 65535.
        #expect(parseError(T.ipv4(proto: 6, src: "10.0.0.1", dst: "10.0.0.2", payload: [UInt8](repeating: 0, count: 16),
                                  fragOffset: 65528)) == .badFragment)
    }

    @Test func ipv6ExtensionChain() throws {
        let bytes = T.ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1", payload: T.tcp(sport: 50000, dport: 22, flags: .syn),
                           ext: [(0, T.optionsHeader()), (60, T.optionsHeader(units: 2)), (43, T.optionsHeader()), (60, T.optionsHeader())])
        let p = try parsed(bytes)
        #expect(p.version == 6 && p.proto == .tcp && p.transportOffset == 40 + 8 + 16 + 8 + 8)
        #expect(p.sourcePort == 50000 && p.destinationPort == 22 && p.tcpFlags == .syn)
        #expect(p.source == IPAddress("fd99::2") && p.destination == IPAddress("2001:db8::1"))
    }

    @Test func ipv6Fragments() throws {
        let first = try parsed(T.ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: T.udp(sport: 4, dport: 5, data: [1, 2]),
                                      ext: [(44, T.fragmentHeader(offset: 0, more: true, id: 0xABCDEF))]))
        #expect(first.fragment == FragmentInfo(identification: 0xABCDEF, offset: 0, moreFragments: true))
        #expect(first.proto == .udp && first.sourcePort == 4 && first.transportOffset == 48)
        let later = try parsed(T.ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: [1, 2, 3],
                                      ext: [(44, T.fragmentHeader(offset: 1232, more: true, id: 5))]))
        #expect(later.fragment.offset == 1232 && !later.hasTransportHeader && later.proto == .udp)
        // RFC 6946 atomic fragment: a fragment header with offset 0, M=0 is no fragment.
        let atomic = try parsed(T.ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: T.udp(sport: 4, dport: 5),
                                       ext: [(44, T.fragmentHeader(offset: 0, more: false, id: 5))]))
        #expect(!atomic.fragment.isFragment && atomic.hasTransportHeader)
    }

    @Test func icmpKinds() throws {
        let v6echo = try parsed(T.ipv6(proto: 58, src: "fd99::2", dst: "2001:db8::1", payload: T.icmp(type: 129, id: 9)))
        #expect(v6echo.icmpType == 129 && v6echo.icmpIdentifier == 9)
        let v4unreach = try parsed(T.ipv4(proto: 1, src: "10.0.0.1", dst: "10.0.0.2", payload: T.icmp(type: 3, code: 13, id: 9)))
        #expect(v4unreach.icmpType == 3 && v4unreach.icmpCode == 13 && v4unreach.icmpIdentifier == 0)
        // ICMPv4's number inside IPv6 is just an unknown protocol there.
        let odd = try parsed(T.ipv6(proto: 1, src: "fd99::2", dst: "2001:db8::1", payload: T.icmp(type: 8), checksummed: false))
        #expect(!odd.hasTransportHeader && odd.proto == .icmp)
    }

    @Test func errors() {
        let tcp = T.tcp(sport: 1, dport: 2, flags: .syn)
        let good = T.ipv4(proto: 6, src: "10.0.0.1", dst: "10.0.0.2", payload: tcp)
        #expect(parseError([]) == .empty)
        var v = good; v[0] = 0x55
        #expect(parseError(v) == .unsupportedVersion(5))
        var ihl = good; ihl[0] = 0x44
        #expect(parseError(ihl) == .badHeaderLength(16))
        var ihlBig = good; ihlBig[0] = 0x4F  // 60 bytes > total length 40
        #expect(parseError(ihlBig) == .badTotalLength(40))
        var tlSmall = good; tlSmall[2] = 0; tlSmall[3] = 19
        #expect(parseError(tlSmall) == .badTotalLength(19))
        var tlBig = good; tlBig[3] = 41
        #expect(parseError(tlBig) == .truncated(needed: 41, have: 40))
        var off = good; off[20 + 12] = 4 << 4
        #expect(parseError(off) == .badDataOffset(16))
        var offBig = good; offBig[20 + 12] = 6 << 4
        #expect(parseError(offBig) == .badDataOffset(24))
        let udp = T.ipv4(proto: 17, src: "10.0.0.1", dst: "10.0.0.2", payload: T.udp(sport: 1, dport: 2, data: [1]))
        var udpShort = udp; udpShort[20 + 5] = 7
        #expect(parseError(udpShort) == .badUDPLength(7))
        var udpLong = udp; udpLong[20 + 5] = 10
        #expect(parseError(udpLong) == .badUDPLength(10))
        #expect(parseError(Array(good[0..<39])) == .truncated(needed: 40, have: 39))
        #expect(parseError(Array(good[0..<10])) == .truncated(needed: 20, have: 10))
        // A TCP header cut by the IP total length.
        let cut = T.ipv4(proto: 6, src: "10.0.0.1", dst: "10.0.0.2", payload: Array(tcp[0..<12]), checksummed: false)
        #expect(parseError(cut) == .truncated(needed: 40, have: 32))
        // v6
        let v6 = T.ipv6(proto: 59, src: "fd99::2", dst: "2001:db8::1", payload: [])
        var jumbo = v6; jumbo[6] = 0
        #expect(parseError(jumbo) == .jumbogram)
        #expect(parseError(Array(v6[0..<39])) == .truncated(needed: 40, have: 39))
    }

    @Test func badExtensionChains() {
        func v6(_ ext: [(UInt8, [UInt8])]) -> [UInt8] {
            T.ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: T.udp(sport: 1, dport: 2), ext: ext)
        }
        // Too long: 9 destination-options headers (the walk stops at 8).
        let long = v6(Array(repeating: (60, T.optionsHeader()), count: 9))
        #expect(parseError(long) == .badExtensionChain(offset: 40 + 8 * 8))
        // Exactly 8 is accepted.
        #expect((try? parsed(v6(Array(repeating: (60, T.optionsHeader()), count: 8))))?.sourcePort == 1)
        // Hop-by-hop not first.
        #expect(parseError(v6([(60, T.optionsHeader()), (0, T.optionsHeader())])) == .badExtensionChain(offset: 48))
        // Two fragment headers.
        let f = T.fragmentHeader(offset: 0, more: false, id: 1)
        #expect(parseError(v6([(44, f), (44, f)])) == .badExtensionChain(offset: 48))
        // A header whose length runs past the payload.
        var over = v6([(60, T.optionsHeader())])
        over[41] = 5
        #expect(parseError(over) == .badExtensionChain(offset: 40))
        // A header cut by the payload length.
        let cutHeader = T.ipv6(proto: 60, src: "fd99::2", dst: "2001:db8::1", payload: [17, 0, 0, 0], checksummed: false)
        #expect(parseError(cutHeader) == .badExtensionChain(offset: 40))
    }

    /// Every prefix of every packet: shorter than the packet it is an error (never a crash),
    /// the whole packet parses.
    @Test func everyPrefixOfEveryPacket() throws {
        for (name, bytes) in T.corpus {
            #expect((try? parsed(bytes)) != nil, "\(name) should parse")
            for n in 0..<bytes.count {
                let r = parse(Array(bytes[0..<n]))
                if case .success(let p) = r { Issue.record("\(name): prefix \(n) parsed as \(p)") }
            }
        }
    }

    /// Random corruption of every corpus packet: every result is an error or a parse whose
    /// offsets stay inside the buffer.
    @Test func randomCorruption() {
        var rng = SplitMix(seed: 0x7E57)
        let corpus = T.corpus
        for _ in 0..<10_000 {
            var bytes = corpus[Int(rng.next() % UInt64(corpus.count))].1
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(bytes.count))
                bytes[i] = UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 4 == 0 { bytes = Array(bytes[0..<Int(rng.next() % UInt64(bytes.count + 1))]) }
            if case .success(let p) = parse(bytes) {
                #expect(p.transportOffset <= p.payloadOffset && p.payloadOffset <= p.totalLength && p.totalLength <= bytes.count)
                #expect(p.version == 4 || p.version == 6)
            }
        }
    }
}

/// A small deterministic generator for random tests (SplitMix64).
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
