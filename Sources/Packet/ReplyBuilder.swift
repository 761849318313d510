import Core
/// Builds the answers a `reject` verdict sends back to the peer, into a caller-owned buffer:
/// a TCP RST (RFC 9293 §3.10.7.1) or an ICMP / ICMPv6 destination unreachable (RFC 792,
/// RFC 1812 §4.3.2.3, RFC 4443 §3.1) quoting the offending packet.
///
/// The reply comes from the offending packet's destination (the gateway answers in its name) to
/// its source, TTL/hop limit 64. Each builder returns the reply's length, or throws
/// `.mustNotAnswer` for packets the RFCs forbid answering, `.bufferTooSmall` when `out` is short.
public enum ReplyBuilder {
    /// Largest ICMPv4 error datagram (RFC 1812 §4.3.2.3: quote as much as fits in 576 bytes).
    public static let icmpv4MaxLength = 576
    /// Largest ICMPv6 error packet (RFC 4443 §2.4(c): must not exceed the minimum MTU, 1280).
    public static let icmpv6MaxLength = 1280
    /// TTL / hop limit of replies.
    public static let replyTTL: UInt8 = 64

    /// A RST answering the TCP segment `packet` (already parsed as `parsed`), per RFC 9293
    /// §3.10.7.1: if the segment has ACK, the RST takes its sequence number from SEG.ACK;
    /// otherwise it has sequence 0, ACK set and acknowledges SEG.SEQ + SEG.LEN (SYN and FIN
    /// count one each). A RST is never answered, nor a fragmented segment without ACK.
    public static func tcpReset(
        answering packet: UnsafeRawBufferPointer, parsed: ParsedPacket, into out: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        guard parsed.proto == .tcp, parsed.hasTransportHeader else { throw .mustNotAnswer("not a TCP segment") }
        guard !parsed.tcpFlags.contains(.rst) else { throw .mustNotAnswer("a RST is never answered") }
        // Without ACK the RST acknowledges SEG.SEQ + SEG.LEN, which a fragment does not tell.
        guard parsed.tcpFlags.contains(.ack) || !parsed.fragment.isFragment else {
            throw .mustNotAnswer("a fragment without ACK: its segment length is unknown")
        }
        try checkUnicast(parsed)
        let ipLength = parsed.version == 4 ? 20 : 40
        let length = ipLength + 20
        guard out.count >= length else { throw .bufferTooSmall(needed: length) }

        let seq: UInt32
        let ack: UInt32
        let flags: TCPFlags
        if parsed.tcpFlags.contains(.ack) {
            seq = parsed.tcpAcknowledgment
            ack = 0
            flags = .rst
        } else {
            var segLen = UInt32(truncatingIfNeeded: max(0, parsed.payloadLength))
            if parsed.tcpFlags.contains(.syn) { segLen &+= 1 }
            if parsed.tcpFlags.contains(.fin) { segLen &+= 1 }
            seq = 0
            ack = parsed.tcpSequence &+ segLen
            flags = [.rst, .ack]
        }
        writeIPHeader(out, parsed: parsed, proto: .tcp, payloadLength: 20)
        let t = ipLength
        out.setBE16(parsed.destinationPort, at: t)
        out.setBE16(parsed.sourcePort, at: t + 2)
        out.setBE32(seq, at: t + 4)
        out.setBE32(ack, at: t + 8)
        out[t + 12] = 5 << 4  // data offset 5 words, no options
        out[t + 13] = flags.rawValue
        out.setBE16(0, at: t + 14)  // window
        out.setBE16(0, at: t + 16)  // checksum, below
        out.setBE16(0, at: t + 18)  // urgent pointer
        var c = InternetChecksum()
        c.addPseudoHeader(source: parsed.destination, destination: parsed.source, proto: .tcp, length: 20)
        c.add(UnsafeRawBufferPointer(rebasing: out[t..<(t + 20)]))
        out.setBE16(c.finalized, at: t + 16)
        return length
    }

    /// A RST that stands in for the TCP segment `packet` (parsed as `parsed`) on its way: from
    /// its source to its destination, sequence SEG.SEQ — the first byte the receiver has not
    /// seen, since the segment itself is dropped — and, when the segment has ACK, ACK with its
    /// SEG.ACK (RFC 9293 §3.10.7.3: a RST in the window resets the connection). Used when a
    /// reply decides a flow `reject`: the reply's sender gets `tcpReset(answering:)`, the peer
    /// that opened the flow this one instead of the reply. Not for a RST or a fragment.
    public static func tcpReset(
        continuing packet: UnsafeRawBufferPointer, parsed: ParsedPacket, into out: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        guard parsed.proto == .tcp, parsed.hasTransportHeader else { throw .mustNotAnswer("not a TCP segment") }
        guard !parsed.tcpFlags.contains(.rst) else { throw .mustNotAnswer("a RST is not stood in for") }
        guard !parsed.fragment.isFragment else { throw .mustNotAnswer("a fragment") }
        try checkUnicast(parsed)
        let ipLength = parsed.version == 4 ? 20 : 40
        let length = ipLength + 20
        guard out.count >= length else { throw .bufferTooSmall(needed: length) }
        let hasACK = parsed.tcpFlags.contains(.ack)
        writeIPHeader(out, parsed: parsed, proto: .tcp, payloadLength: 20, forward: true)
        let t = ipLength
        out.setBE16(parsed.sourcePort, at: t)
        out.setBE16(parsed.destinationPort, at: t + 2)
        out.setBE32(parsed.tcpSequence, at: t + 4)
        out.setBE32(hasACK ? parsed.tcpAcknowledgment : 0, at: t + 8)
        out[t + 12] = 5 << 4
        out[t + 13] = (hasACK ? [.rst, .ack] : TCPFlags.rst).rawValue
        out.setBE16(0, at: t + 14)
        out.setBE16(0, at: t + 16)
        out.setBE16(0, at: t + 18)
        var c = InternetChecksum()
        c.addPseudoHeader(source: parsed.source, destination: parsed.destination, proto: .tcp, length: 20)
        c.add(UnsafeRawBufferPointer(rebasing: out[t..<(t + 20)]))
        out.setBE16(c.finalized, at: t + 16)
        return length
    }

    /// Parses `packet` and answers it with a RST (see the other overload).
    public static func tcpReset(
        answering packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        try tcpReset(answering: packet, parsed: try PacketParser.parse(packet), into: out)
    }

    /// An ICMPv4 type 3 or ICMPv6 type 1 destination unreachable answering `packet` (parsed as
    /// `parsed`), quoting as much of it as fits in 576 (IPv4) or 1280 (IPv6) bytes. Not sent
    /// for ICMP error messages, later fragments, or multicast/broadcast/unspecified addresses
    /// (RFC 1122 §3.2.2, RFC 4443 §2.4(e)).
    public static func unreachable(
        answering packet: UnsafeRawBufferPointer, parsed: ParsedPacket, reason: UnreachableReason,
        into out: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        guard !parsed.fragment.isLaterFragment else { throw .mustNotAnswer("a later fragment") }
        try checkUnicast(parsed)
        let isV4 = parsed.version == 4
        if parsed.hasTransportHeader {
            if isV4 && parsed.proto == .icmp && !isICMPv4Query(parsed.icmpType) {
                throw .mustNotAnswer("an ICMP error message")
            }
            if !isV4 && parsed.proto == .icmpv6 && parsed.icmpType < 128 {
                throw .mustNotAnswer("an ICMPv6 error message")
            }
        } else if parsed.proto == (isV4 ? .icmp : .icmpv6) {
            throw .mustNotAnswer("an ICMP message without a complete header")
        }
        let ipLength = isV4 ? 20 : 40
        let maxLength = isV4 ? icmpv4MaxLength : icmpv6MaxLength
        let quote = min(parsed.totalLength, packet.count, maxLength - ipLength - 8)
        let icmpLength = 8 + quote
        let length = ipLength + icmpLength
        guard out.count >= length else { throw .bufferTooSmall(needed: length) }

        writeIPHeader(out, parsed: parsed, proto: isV4 ? .icmp : .icmpv6, payloadLength: icmpLength)
        let t = ipLength
        out[t] = isV4 ? 3 : 1
        out[t + 1] = isV4 ? reason.v4Code : reason.v6Code
        out.setBE16(0, at: t + 2)
        out.setBE32(0, at: t + 4)  // unused
        UnsafeMutableRawBufferPointer(rebasing: out[(t + 8)..<(t + 8 + quote)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[0..<quote]))
        var c = InternetChecksum()
        if !isV4 {
            c.addPseudoHeader(source: parsed.destination, destination: parsed.source, proto: .icmpv6, length: icmpLength)
        }
        c.add(UnsafeRawBufferPointer(rebasing: out[t..<length]))
        out.setBE16(c.finalized, at: t + 2)
        return length
    }

    /// Parses `packet` and answers it with a destination unreachable (see the other overload).
    public static func unreachable(
        answering packet: UnsafeRawBufferPointer, reason: UnreachableReason, into out: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        try unreachable(answering: packet, parsed: try PacketParser.parse(packet), reason: reason, into: out)
    }

    /// ICMPv4 echo, timestamp, information and address-mask requests/replies: the messages that
    /// are not errors. Anything else (errors and unknown types) is not answered.
    static func isICMPv4Query(_ type: UInt8) -> Bool {
        switch type {
        case 0, 8, 13, 14, 15, 16, 17, 18: return true
        default: return false
        }
    }

    /// Refuses sources that do not name one host and destinations that are not one host.
    static func checkUnicast(_ p: ParsedPacket) throws(PacketError) {
        if p.version == 4 {
            let s = p.source.v4
            let d = p.destination.v4
            if s == 0 || s >> 28 == 0xE || s == 0xFFFF_FFFF { throw .mustNotAnswer("source is not a unicast address") }
            if d >> 28 == 0xE || d == 0xFFFF_FFFF || d == 0 { throw .mustNotAnswer("destination is not a unicast address") }
        } else {
            if p.source.high == 0 && p.source.low == 0 || p.source.high >> 56 == 0xFF {
                throw .mustNotAnswer("source is not a unicast address")
            }
            if p.destination.high >> 56 == 0xFF || p.destination.high == 0 && p.destination.low == 0 {
                throw .mustNotAnswer("destination is not a unicast address")
            }
        }
    }

    /// Writes a 20-byte IPv4 or 40-byte IPv6 header from `parsed.destination` to `parsed.source`.
    static func writeIPHeader(
        _ out: UnsafeMutableRawBufferPointer, parsed: ParsedPacket, proto: IPProtocol, payloadLength: Int,
        forward: Bool = false
    ) {
        // A reply goes from the packet's destination to its source; `forward`, the same way.
        let (from, to) = forward ? (parsed.source, parsed.destination) : (parsed.destination, parsed.source)
        if parsed.version == 4 {
            out[0] = 0x45
            out[1] = 0
            out.setBE16(UInt16(20 + payloadLength), at: 2)
            out.setBE16(0, at: 4)  // identification
            out.setBE16(0x4000, at: 6)  // DF, offset 0
            out[8] = replyTTL
            out[9] = proto.rawValue
            out.setBE16(0, at: 10)
            out.setBE32(from.v4, at: 12)
            out.setBE32(to.v4, at: 16)
            out.setBE16(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: out[0..<20])), at: 10)
        } else {
            out.setBE32(0x6000_0000, at: 0)
            out.setBE16(UInt16(payloadLength), at: 4)
            out[6] = proto.rawValue
            out[7] = replyTTL
            out.setBE64(from.high, at: 8)
            out.setBE64(from.low, at: 16)
            out.setBE64(to.high, at: 24)
            out.setBE64(to.low, at: 32)
        }
    }
}
