import Core
/// Zero-copy parser for the IP packets the gateway sees on its TUN side: IPv4 (RFC 791) with
/// options, IPv6 (RFC 8200) with its extension-header chain, and TCP (RFC 9293), UDP (RFC 768),
/// ICMP (RFC 792) and ICMPv6 (RFC 4443) headers.
///
/// It reads the caller's buffer in place and returns a `ParsedPacket` value; malformed or
/// truncated input throws a `PacketError` — there is no input that traps. Bytes after the IP
/// total length (link padding) are ignored.
public enum PacketParser {
    /// The most IPv6 extension headers walked before the chain is declared bad (RFC 8200 §4.1
    /// recommends order and at most one of each, except two Destination Options: 6 is the most a
    /// well-formed packet has; 8 leaves room for AH).
    public static let maxExtensionHeaders = 8

    /// Parses one IP packet starting at the first byte of `bytes`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(PacketError) -> ParsedPacket {
        guard bytes.count > 0 else { throw .empty }
        let version = bytes[0] >> 4
        switch version {
        case 4: return try parseV4(bytes, quoted: false)
        case 6: return try parseV6(bytes, quoted: false)
        default: throw .unsupportedVersion(version)
        }
    }

    /// Parses the invoking packet quoted in an ICMP or ICMPv6 error message (RFC 792; RFC 1812
    /// §4.3.2.3; RFC 4443 §2.4(c)), which is usually cut short: the IP header (and IPv6
    /// extension headers) must be complete, the length fields may claim more than is there.
    /// `totalLength` is then the quoted length. With at least 8 bytes of a TCP/UDP header the
    /// ports are read (and for TCP the sequence number); `hasTransportHeader` is true only when
    /// the whole header was quoted. Use it to attribute an ICMP error to the flow it is about
    /// (`flowKey` of the result; `reversed` tells which side sent the quoted packet).
    public static func parseQuoted(_ bytes: UnsafeRawBufferPointer) throws(PacketError) -> ParsedPacket {
        guard bytes.count > 0 else { throw .empty }
        let version = bytes[0] >> 4
        switch version {
        case 4: return try parseV4(bytes, quoted: true)
        case 6: return try parseV6(bytes, quoted: true)
        default: throw .unsupportedVersion(version)
        }
    }

    @inline(__always) static func parseV4(_ p: UnsafeRawBufferPointer, quoted: Bool) throws(PacketError) -> ParsedPacket {
        let count = p.count
        guard count >= 20 else { throw .truncated(needed: 20, have: count) }
        let ihl = Int(p[0] & 0x0F) &* 4
        guard ihl >= 20 else { throw .badHeaderLength(ihl) }
        var total = Int(p.be16(2))
        guard total >= ihl else { throw .badTotalLength(total) }
        if quoted {
            guard count >= ihl else { throw .truncated(needed: ihl, have: count) }
            total = min(total, count)
        }
        guard count >= total else { throw .truncated(needed: total, have: count) }
        let fragField = p.be16(6)
        let fragOffset = Int(fragField & 0x1FFF) &* 8
        guard fragOffset &+ (total &- ihl) <= 65535 else { throw .badFragment }

        var r = ParsedPacket()
        r.version = 4
        r.ttl = p[8]
        r.proto = IPProtocol(rawValue: p[9])
        r.source = IPAddress(v4: p.be32(12))
        r.destination = IPAddress(v4: p.be32(16))
        r.fragment = FragmentInfo(
            identification: UInt32(p.be16(4)), offset: fragOffset, moreFragments: fragField & 0x2000 != 0)
        r.totalLength = total
        r.transportOffset = ihl
        r.payloadOffset = ihl
        if fragOffset == 0 { try parseTransport(p, into: &r, quoted: quoted) }
        return r
    }

    @inline(__always) static func parseV6(_ p: UnsafeRawBufferPointer, quoted: Bool) throws(PacketError) -> ParsedPacket {
        let count = p.count
        guard count >= 40 else { throw .truncated(needed: 40, have: count) }
        let payloadLength = Int(p.be16(4))
        var next = p[6]
        if payloadLength == 0 && next == 0 { throw .jumbogram }
        let total = quoted ? min(40 &+ payloadLength, count) : 40 &+ payloadLength
        guard count >= total else { throw .truncated(needed: total, have: count) }

        var r = ParsedPacket()
        r.version = 6
        r.ttl = p[7]
        r.source = IPAddress(v6High: p.be64(8), low: p.be64(16))
        r.destination = IPAddress(v6High: p.be64(24), low: p.be64(32))
        r.totalLength = total

        var offset = 40
        var headers = 0
        var sawFragment = false
        chain: while true {
            switch next {
            case 0, 43, 60, 44, 51:  // hop-by-hop, routing, destination options, fragment, AH
                headers &+= 1
                guard headers <= maxExtensionHeaders else { throw .badExtensionChain(offset: offset) }
                if next == 0 && offset != 40 { throw .badExtensionChain(offset: offset) }
                guard offset &+ 8 <= total else { throw .badExtensionChain(offset: offset) }
                let length: Int
                if next == 44 {
                    guard !sawFragment else { throw .badExtensionChain(offset: offset) }
                    sawFragment = true
                    let field = p.be16(offset &+ 2)
                    r.fragment = FragmentInfo(
                        identification: p.be32(offset &+ 4), offset: Int(field & 0xFFF8),
                        moreFragments: field & 1 != 0)
                    length = 8
                } else if next == 51 {
                    length = (Int(p[offset &+ 1]) &+ 2) &* 4  // RFC 4302 §2.2: 4-octet units minus 2
                } else {
                    length = (Int(p[offset &+ 1]) &+ 1) &* 8  // RFC 8200 §4.3: 8-octet units minus 1
                }
                guard offset &+ length <= total else { throw .badExtensionChain(offset: offset) }
                next = p[offset]
                offset &+= length
            default:
                break chain
            }
        }
        guard r.fragment.offset &+ (total &- offset) <= 65535 else { throw .badFragment }
        r.proto = IPProtocol(rawValue: next)
        r.transportOffset = offset
        r.payloadOffset = offset
        if r.fragment.offset == 0 { try parseTransport(p, into: &r, quoted: quoted) }
        return r
    }

    /// Parses the TCP/UDP/ICMP/ICMPv6 header at `r.transportOffset`, bounded by `r.totalLength`.
    /// `quoted`: the packet may be cut short (see `parseQuoted`).
    @inline(__always) static func parseTransport(
        _ p: UnsafeRawBufferPointer, into r: inout ParsedPacket, quoted: Bool
    ) throws(PacketError) {
        let t = r.transportOffset
        let end = r.totalLength
        switch r.proto.rawValue {
        case 6:  // TCP
            if quoted && t &+ 20 > end {
                guard t &+ 8 <= end else { throw .truncated(needed: t &+ 8, have: end) }
                r.sourcePort = p.be16(t)
                r.destinationPort = p.be16(t &+ 2)
                r.tcpSequence = p.be32(t &+ 4)
                r.payloadOffset = end
                return
            }
            guard t &+ 20 <= end else { throw .truncated(needed: t &+ 20, have: end) }
            let dataOffset = Int(p[t &+ 12] >> 4) &* 4
            guard dataOffset >= 20, t &+ dataOffset <= end else { throw .badDataOffset(dataOffset) }
            r.sourcePort = p.be16(t)
            r.destinationPort = p.be16(t &+ 2)
            r.tcpSequence = p.be32(t &+ 4)
            r.tcpAcknowledgment = p.be32(t &+ 8)
            r.tcpFlags = TCPFlags(rawValue: p[t &+ 13])
            r.payloadOffset = t &+ dataOffset
        case 17:  // UDP
            guard t &+ 8 <= end else { throw .truncated(needed: t &+ 8, have: end) }
            let length = Int(p.be16(t &+ 4))
            // A first fragment holds only part of the datagram the length field describes.
            guard length >= 8, quoted || r.fragment.moreFragments || t &+ length <= end else {
                throw .badUDPLength(length)
            }
            r.sourcePort = p.be16(t)
            r.destinationPort = p.be16(t &+ 2)
            r.payloadOffset = t &+ 8
        case 1, 58:  // ICMP, ICMPv6 (each only in its own IP version)
            guard (r.proto.rawValue == 1) == (r.version == 4) else { return }
            guard t &+ 8 <= end else { throw .truncated(needed: t &+ 8, have: end) }
            let type = p[t]
            r.icmpType = type
            r.icmpCode = p[t &+ 1]
            let isEcho = r.version == 4 ? (type == 8 || type == 0) : (type == 128 || type == 129)
            if isEcho { r.icmpIdentifier = p.be16(t &+ 4) }
            r.payloadOffset = t &+ 8
        default:
            return
        }
        r.hasTransportHeader = true
    }
}
