import Core
import Testing
@testable import Packet

/// Builds a reply into a fresh buffer and returns its bytes, or the error.
func buildReply(
    _ packet: [UInt8], capacity: Int = 1500,
    _ build: (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) throws(PacketError) -> Int
) -> Result<[UInt8], PacketError> {
    var out = [UInt8](repeating: 0xEE, count: capacity)
    return packet.withUnsafeBytes { p in
        out.withUnsafeMutableBytes { o in
            Result { () throws(PacketError) in try build(p, o) }
        }
    }.map { n in Array(out[0..<n]) }
}

func rst(_ packet: [UInt8], capacity: Int = 1500) -> Result<[UInt8], PacketError> {
    buildReply(packet, capacity: capacity) { p, o throws(PacketError) in try ReplyBuilder.tcpReset(answering: p, into: o) }
}

func unreach(_ packet: [UInt8], _ reason: UnreachableReason = .portUnreachable, capacity: Int = 1500) -> Result<[UInt8], PacketError> {
    buildReply(packet, capacity: capacity) { p, o throws(PacketError) in
        try ReplyBuilder.unreachable(answering: p, reason: reason, into: o)
    }
}

/// True when the IP header (v4) and the transport checksum of `bytes` verify.
func checksumsVerify(_ bytes: [UInt8]) throws -> Bool {
    let p = try parsed(bytes)
    return bytes.withUnsafeBytes { b in
        if p.version == 4 && InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: b[0..<p.transportOffset])) != 0 {
            return false
        }
        var c = InternetChecksum()
        if p.proto != .icmp {
            c.addPseudoHeader(source: p.source, destination: p.destination, proto: p.proto, length: p.totalLength - p.transportOffset)
        }
        c.add(UnsafeRawBufferPointer(rebasing: b[p.transportOffset..<p.totalLength]))
        return c.finalized == 0 && TestPackets.slowSum(
            (p.proto == .icmp ? [] : TestPackets.pseudo(p.source, p.destination, p.proto.rawValue, p.totalLength - p.transportOffset))
                + Array(bytes[p.transportOffset..<p.totalLength])) == 0xFFFF
    }
}

@Suite struct ReplyBuilderTests {
    typealias T = TestPackets

    /// RFC 9293 §3.10.7.1: a SYN (no ACK) gets <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
    @Test func resetForSyn() throws {
        let syn = T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10", payload: T.tcp(sport: 40000, dport: 25, seq: 1000, flags: .syn))
        let reply = try rst(syn).get()
        let p = try parsed(reply)
        #expect(p.source == IPAddress("192.0.2.10") && p.destination == IPAddress("10.99.0.2"))
        #expect(p.sourcePort == 25 && p.destinationPort == 40000)
        #expect(p.tcpFlags == [.rst, .ack] && p.tcpSequence == 0 && p.tcpAcknowledgment == 1001)
        #expect(p.totalLength == 40 && p.ttl == 64 && p.payloadLength == 0)
        #expect(try checksumsVerify(reply))
    }

    /// A segment with ACK gets <SEQ=SEG.ACK><CTL=RST>.
    @Test func resetForAck() throws {
        let seg = T.ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1",
                         payload: T.tcp(sport: 50000, dport: 443, seq: 5, ack: 0xFFFF_FFF0, flags: [.ack, .psh], data: [1, 2, 3]))
        let reply = try rst(seg).get()
        let p = try parsed(reply)
        #expect(p.version == 6 && p.source == IPAddress("2001:db8::1") && p.destination == IPAddress("fd99::2"))
        #expect(p.tcpFlags == .rst && p.tcpSequence == 0xFFFF_FFF0 && p.tcpAcknowledgment == 0)
        #expect(p.sourcePort == 443 && p.destinationPort == 50000 && p.totalLength == 60)
        #expect(try checksumsVerify(reply))
    }

    /// Data and FIN without ACK: the ACK covers data + SYN + FIN, wrapping mod 2^32.
    @Test func resetCountsDataSynFin() throws {
        let seg = T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10",
                         payload: T.tcp(sport: 1, dport: 2, seq: 0xFFFF_FFFE, flags: [.syn, .fin], data: [1, 2, 3, 4, 5]))
        let p = try parsed(try rst(seg).get())
        #expect(p.tcpAcknowledgment == 0xFFFF_FFFE &+ 7)
    }

    /// A RST standing in for a segment on its way: same direction, SEQ = SEG.SEQ (the byte the
    /// receiver expects next), ACK with SEG.ACK when the segment had it.
    @Test func resetContinuingASegment() throws {
        func cont(_ packet: [UInt8]) -> Result<[UInt8], PacketError> {
            buildReply(packet) { p, o throws(PacketError) in
                try ReplyBuilder.tcpReset(continuing: p, parsed: try PacketParser.parse(p), into: o)
            }
        }
        let banner = T.ipv4(proto: 6, src: "198.19.0.9", dst: "10.99.0.2",
                            payload: T.tcp(sport: 25, dport: 40000, seq: 5000, ack: 1000, flags: [.ack, .psh], data: Array("220 mail\r\n".utf8)))
        let reply = try cont(banner).get()
        let p = try parsed(reply)
        #expect(p.source == IPAddress("198.19.0.9") && p.destination == IPAddress("10.99.0.2"))
        #expect(p.sourcePort == 25 && p.destinationPort == 40000)
        #expect(p.tcpFlags == [.rst, .ack] && p.tcpSequence == 5000 && p.tcpAcknowledgment == 1000)
        #expect(p.totalLength == 40 && p.payloadLength == 0)
        #expect(try checksumsVerify(reply))
        let v6 = T.ipv6(proto: 6, src: "2001:db8::1", dst: "fd99::2", payload: T.tcp(sport: 22, dport: 50000, seq: 7, flags: .psh, data: [1]))
        let r6 = try parsed(try cont(v6).get())
        #expect(r6.version == 6 && r6.source == IPAddress("2001:db8::1") && r6.destination == IPAddress("fd99::2"))
        #expect(r6.tcpFlags == .rst && r6.tcpSequence == 7 && r6.tcpAcknowledgment == 0)
        #expect(try checksumsVerify(try cont(v6).get()))
        let r = T.ipv4(proto: 6, src: "198.19.0.9", dst: "10.99.0.2", payload: T.tcp(sport: 1, dport: 2, flags: [.rst, .ack]))
        #expect(cont(r) == .failure(.mustNotAnswer("a RST is not stood in for")))
    }

    @Test func resetRefusals() {
        let r = T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10", payload: T.tcp(sport: 1, dport: 2, flags: [.rst, .ack]))
        #expect(rst(r) == .failure(.mustNotAnswer("a RST is never answered")))
        let udp = T.ipv4(proto: 17, src: "10.99.0.2", dst: "192.0.2.10", payload: T.udp(sport: 1, dport: 2))
        #expect(rst(udp) == .failure(.mustNotAnswer("not a TCP segment")))
        let mcast = T.ipv4(proto: 6, src: "10.99.0.2", dst: "224.0.0.1", payload: T.tcp(sport: 1, dport: 2, flags: .syn))
        #expect(rst(mcast) == .failure(.mustNotAnswer("destination is not a unicast address")))
        let v6src = T.ipv6(proto: 6, src: "::", dst: "2001:db8::1", payload: T.tcp(sport: 1, dport: 2, flags: .syn))
        #expect(rst(v6src) == .failure(.mustNotAnswer("source is not a unicast address")))
        let syn = T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10", payload: T.tcp(sport: 1, dport: 2, flags: .syn))
        #expect(rst(syn, capacity: 39) == .failure(.bufferTooSmall(needed: 40)))
    }

    @Test func icmpv4UnreachableQuotesThePacket() throws {
        let udp = T.ipv4(proto: 17, src: "10.99.0.2", dst: "192.0.2.10", payload: T.udp(sport: 5000, dport: 6881, data: [9, 9, 9]))
        let reply = try unreach(udp).get()
        let p = try parsed(reply)
        #expect(p.proto == .icmp && p.icmpType == 3 && p.icmpCode == 3)
        #expect(p.source == IPAddress("192.0.2.10") && p.destination == IPAddress("10.99.0.2"))
        #expect(Array(reply[28...]) == udp)
        #expect(try checksumsVerify(reply))
        let admin = try parsed(try unreach(udp, .administrativelyProhibited).get())
        #expect(admin.icmpCode == 13)
        // The quoted packet parses back to the offending flow.
        let inner = try parsed(Array(reply[28...]))
        #expect(inner.flowKey.key == (try parsed(udp)).flowKey.key)
    }

    @Test func icmpv4UnreachableStaysWithin576() throws {
        let big = T.ipv4(proto: 17, src: "10.99.0.2", dst: "192.0.2.10",
                         payload: T.udp(sport: 5000, dport: 53, data: [UInt8](repeating: 0xAB, count: 1400)))
        let reply = try unreach(big).get()
        #expect(reply.count == 576)
        #expect(Array(reply[28...]) == Array(big[0..<548]))
        #expect(try checksumsVerify(reply))
    }

    @Test func icmpv6UnreachableStaysWithin1280() throws {
        let big = T.ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1",
                         payload: T.udp(sport: 5000, dport: 53, data: [UInt8](repeating: 0xCD, count: 1400)))
        let reply = try unreach(big, .administrativelyProhibited).get()
        #expect(reply.count == 1280)
        let p = try parsed(reply)
        #expect(p.proto == .icmpv6 && p.icmpType == 1 && p.icmpCode == 1)
        #expect(Array(reply[48...]) == Array(big[0..<1232]))
        #expect(try checksumsVerify(reply))
        let small = T.ipv6(proto: 17, src: "fd99::2", dst: "2001:db8::1", payload: T.udp(sport: 5000, dport: 53))
        let r2 = try unreach(small).get()
        #expect(try parsed(r2).icmpCode == 4 && r2.count == 48 + small.count)
        #expect(try checksumsVerify(r2))
    }

    @Test func unreachableRefusals() {
        let icmpErr = T.ipv4(proto: 1, src: "10.99.0.2", dst: "192.0.2.10", payload: T.icmp(type: 3, code: 3))
        #expect(unreach(icmpErr) == .failure(.mustNotAnswer("an ICMP error message")))
        let icmp6Err = T.ipv6(proto: 58, src: "fd99::2", dst: "2001:db8::1", payload: T.icmp(type: 1, code: 4))
        #expect(unreach(icmp6Err) == .failure(.mustNotAnswer("an ICMPv6 error message")))
        let later = T.ipv4(proto: 17, src: "10.99.0.2", dst: "192.0.2.10", payload: [1, 2, 3, 4], fragOffset: 1480)
        #expect(unreach(later) == .failure(.mustNotAnswer("a later fragment")))
        let bcast = T.ipv4(proto: 17, src: "10.99.0.2", dst: "255.255.255.255", payload: T.udp(sport: 68, dport: 67))
        #expect(unreach(bcast) == .failure(.mustNotAnswer("destination is not a unicast address")))
        let mc6 = T.ipv6(proto: 17, src: "fd99::2", dst: "ff02::1", payload: T.udp(sport: 1, dport: 2))
        #expect(unreach(mc6) == .failure(.mustNotAnswer("destination is not a unicast address")))
        let echo = T.ipv4(proto: 1, src: "10.99.0.2", dst: "192.0.2.10", payload: T.icmp(type: 8, id: 1))
        #expect((try? unreach(echo).get()) != nil)
        let udp = T.ipv4(proto: 17, src: "10.99.0.2", dst: "192.0.2.10", payload: T.udp(sport: 1, dport: 2))
        #expect(unreach(udp, capacity: 20) == .failure(.bufferTooSmall(needed: 28 + udp.count)))
    }

    /// Every corpus packet gets either a refusal or a reply that parses with valid checksums.
    @Test func repliesToTheWholeCorpus() throws {
        for (name, bytes) in T.corpus {
            for result in [rst(bytes), unreach(bytes)] {
                if case .success(let reply) = result {
                    #expect(try checksumsVerify(reply), "\(name)")
                }
            }
        }
    }
}

@Suite struct ReplyBuilderFragmentTests {
    @Test func fragmentedSegmentWithoutAckIsNotReset() {
        let synFrag = TestPackets.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10",
                                       payload: TestPackets.tcp(sport: 1, dport: 2, flags: .syn, data: [1, 2, 3, 4]), moreFragments: true)
        #expect(rst(synFrag) == .failure(.mustNotAnswer("a fragment without ACK: its segment length is unknown")))
        let ackFrag = TestPackets.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10",
                                       payload: TestPackets.tcp(sport: 1, dport: 2, ack: 55, flags: .ack, data: [1, 2]), moreFragments: true)
        #expect((try? parsed(try rst(ackFrag).get()))?.tcpSequence == 55)
    }
}
