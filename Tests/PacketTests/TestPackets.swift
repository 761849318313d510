import Core
@testable import Packet

/// Slow, obviously right packet construction for tests (independent of the code under test,
/// including its own RFC 1071 sum).
enum TestPackets {
    static func slowSum(_ bytes: [UInt8]) -> UInt16 {
        var s: UInt32 = 0
        var i = 0
        while i < bytes.count {
            let hi = UInt32(bytes[i])
            let lo = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            s += hi << 8 | lo
            while s > 0xFFFF { s = (s & 0xFFFF) + (s >> 16) }
            i += 2
        }
        return UInt16(s)
    }

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func addressBytes(_ a: IPAddress) -> [UInt8] {
        if !a.isIPv6 { return be32(a.v4) }
        return (0..<8).map { UInt8(a.high >> UInt64(56 - 8 * $0) & 0xFF) } + (0..<8).map { UInt8(a.low >> UInt64(56 - 8 * $0) & 0xFF) }
    }

    static func pseudo(_ src: IPAddress, _ dst: IPAddress, _ proto: UInt8, _ length: Int) -> [UInt8] {
        if src.isIPv6 { return addressBytes(src) + addressBytes(dst) + be32(UInt32(length)) + [0, 0, 0, proto] }
        return addressBytes(src) + addressBytes(dst) + [0, proto] + be16(UInt16(length))
    }

    /// Sets the checksum at `at` of `segment` (with pseudo-header when `pseudo` is non-empty).
    static func withChecksum(_ segment: [UInt8], at: Int, pseudo: [UInt8]) -> [UInt8] {
        var s = segment
        s[at] = 0
        s[at + 1] = 0
        let c = ~slowSum(pseudo + s)
        s[at] = UInt8(c >> 8)
        s[at + 1] = UInt8(c & 0xFF)
        return s
    }

    static func tcp(sport: UInt16, dport: UInt16, seq: UInt32 = 1000, ack: UInt32 = 0, flags: TCPFlags,
                    data: [UInt8] = [], options: [UInt8] = []) -> [UInt8] {
        precondition(options.count % 4 == 0)
        let off = UInt8((20 + options.count) / 4)
        return be16(sport) + be16(dport) + be32(seq) + be32(ack) + [off << 4, flags.rawValue] + be16(65535)
            + [0, 0, 0, 0] + options + data
    }

    static func udp(sport: UInt16, dport: UInt16, data: [UInt8] = []) -> [UInt8] {
        be16(sport) + be16(dport) + be16(UInt16(8 + data.count)) + [0, 0] + data
    }

    static func icmp(type: UInt8, code: UInt8 = 0, id: UInt16 = 0, seq: UInt16 = 0, data: [UInt8] = []) -> [UInt8] {
        [type, code, 0, 0] + be16(id) + be16(seq) + data
    }

    /// A transport segment with its checksum filled in (TCP 16, UDP 6, ICMP 2, ICMPv6 2).
    static func finish(_ proto: UInt8, _ seg: [UInt8], _ src: IPAddress, _ dst: IPAddress) -> [UInt8] {
        switch proto {
        case 6: return withChecksum(seg, at: 16, pseudo: pseudo(src, dst, 6, seg.count))
        case 17: return withChecksum(seg, at: 6, pseudo: pseudo(src, dst, 17, seg.count))
        case 1: return withChecksum(seg, at: 2, pseudo: [])
        case 58: return withChecksum(seg, at: 2, pseudo: pseudo(src, dst, 58, seg.count))
        default: return seg
        }
    }

    static func ipv4(proto: UInt8, src: String, dst: String, payload: [UInt8], options: [UInt8] = [],
                     id: UInt16 = 0x1234, fragOffset: Int = 0, moreFragments: Bool = false, ttl: UInt8 = 64,
                     checksummed: Bool = true) -> [UInt8] {
        let s = IPAddress(src)!, d = IPAddress(dst)!
        let body = checksummed && fragOffset == 0 && !moreFragments ? finish(proto, payload, s, d) : payload
        let ihl = 20 + options.count
        precondition(options.count % 4 == 0)
        let frag = UInt16(fragOffset / 8) | (moreFragments ? 0x2000 : 0)
        var h: [UInt8] = [0x40 | UInt8(ihl / 4), 0] + be16(UInt16(ihl + body.count)) + be16(id) + be16(frag)
            + [ttl, proto, 0, 0] + be32(s.v4) + be32(d.v4) + options
        let c = ~slowSum(h)
        h[10] = UInt8(c >> 8)
        h[11] = UInt8(c & 0xFF)
        return h + body
    }

    /// IPv6 with extension headers `ext` (each given as (type, bytes incl. its next-header byte
    /// placeholder at 0)); next-header bytes are chained automatically.
    static func ipv6(proto: UInt8, src: String, dst: String, payload: [UInt8], ext: [(UInt8, [UInt8])] = [],
                     hopLimit: UInt8 = 64, checksummed: Bool = true) -> [UInt8] {
        let s = IPAddress(src)!, d = IPAddress(dst)!
        let isFrag = ext.contains { $0.0 == 44 }
        let body = checksummed && !isFrag ? finish(proto, payload, s, d) : payload
        var chain: [UInt8] = []
        for (i, e) in ext.enumerated() {
            var bytes = e.1
            bytes[0] = i + 1 < ext.count ? ext[i + 1].0 : proto
            chain += bytes
        }
        let first = ext.first?.0 ?? proto
        return be32(0x6000_0000) + be16(UInt16(chain.count + body.count)) + [first, hopLimit]
            + addressBytes(s) + addressBytes(d) + chain + body
    }

    /// An options-style extension header (hop-by-hop 0, routing 43, destination options 60) of
    /// `units` × 8 bytes, padded with PadN.
    static func optionsHeader(units: Int = 1) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: units * 8)
        h[1] = UInt8(units - 1)
        h[2] = 1  // PadN
        h[3] = UInt8(units * 8 - 4)
        return h
    }

    static func fragmentHeader(offset: Int, more: Bool, id: UInt32) -> [UInt8] {
        [0, 0] + be16(UInt16(offset) | (more ? 1 : 0)) + be32(id)
    }

    /// A varied set of valid packets, named, for table-driven tests.
    static var corpus: [(String, [UInt8])] {
        let data = Array("hello, world".utf8)
        return [
            ("v4 tcp syn", ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10",
                                payload: tcp(sport: 40000, dport: 443, seq: 7, flags: .syn, options: [2, 4, 5, 0xB4]))),
            ("v4 tcp data", ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10",
                                 payload: tcp(sport: 40000, dport: 443, seq: 8, ack: 99, flags: [.ack, .psh], data: data))),
            ("v4 options udp", ipv4(proto: 17, src: "10.99.0.2", dst: "8.8.8.8",
                                    payload: udp(sport: 5353, dport: 53, data: data), options: [0x94, 4, 0, 0, 1, 1, 1, 0])),
            ("v4 icmp echo", ipv4(proto: 1, src: "10.99.0.2", dst: "1.1.1.1", payload: icmp(type: 8, id: 0x4242, seq: 1, data: data))),
            ("v4 gre", ipv4(proto: 47, src: "10.99.0.2", dst: "1.1.1.1", payload: [0, 0, 8, 0])),
            ("v4 first fragment", ipv4(proto: 17, src: "10.99.0.2", dst: "8.8.8.8",
                                       payload: udp(sport: 1000, dport: 2000, data: data + data), id: 77, moreFragments: true)),
            ("v4 later fragment", ipv4(proto: 17, src: "10.99.0.2", dst: "8.8.8.8", payload: data, id: 77, fragOffset: 32)),
            ("v6 tcp", ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1",
                            payload: tcp(sport: 50000, dport: 80, flags: [.ack], data: data))),
            ("v6 udp", ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: udp(sport: 4000, dport: 443, data: data))),
            ("v6 icmpv6 echo", ipv6(proto: 58, src: "fd99::2", dst: "2001:db8::1", payload: icmp(type: 128, id: 9, seq: 1))),
            ("v6 ext chain", ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1",
                                  payload: tcp(sport: 50000, dport: 22, flags: .syn),
                                  ext: [(0, optionsHeader()), (60, optionsHeader(units: 2)), (43, optionsHeader()),
                                        (60, optionsHeader())])),
            ("v6 first fragment", ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1",
                                       payload: udp(sport: 4000, dport: 443, data: data + data),
                                       ext: [(44, fragmentHeader(offset: 0, more: true, id: 0xABCDEF))])),
            ("v6 later fragment", ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: data,
                                       ext: [(44, fragmentHeader(offset: 24, more: false, id: 0xABCDEF))])),
            ("v6 no next header", ipv6(proto: 59, src: "fd99::2", dst: "2001:db8::1", payload: [])),
        ]
    }
}
