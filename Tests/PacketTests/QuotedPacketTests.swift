import Core
import Testing
@testable import Packet

/// ICMP errors are attributed to the flow of the packet they quote.
@Suite struct QuotedPacketTests {
    typealias T = TestPackets

    func quoted(_ b: [UInt8]) -> Result<ParsedPacket, PacketError> {
        b.withUnsafeBytes { p in Result { () throws(PacketError) in try PacketParser.parseQuoted(p) } }
    }

    @Test func unreachableQuotesBackToTheFlow() throws {
        let cases: [[UInt8]] = [
            T.ipv4(proto: 17, src: "10.99.0.2", dst: "192.0.2.10", payload: T.udp(sport: 5000, dport: 6881, data: [UInt8](repeating: 1, count: 900))),
            T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10", payload: T.tcp(sport: 40000, dport: 25, flags: .syn)),
            T.ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1",
                   payload: T.tcp(sport: 40000, dport: 443, ack: 9, flags: .ack, data: [UInt8](repeating: 2, count: 1400)),
                   ext: [(0, T.optionsHeader())]),
            T.ipv4(proto: 1, src: "10.99.0.2", dst: "192.0.2.10", payload: T.icmp(type: 8, id: 4242)),
        ]
        for original in cases {
            let reply = try unreach(original).get()
            let error = try parsed(reply)
            #expect(error.isICMPError)
            let inner = try quoted(Array(reply[error.payloadOffset...])).get()
            let want = try parsed(original).flowKey
            #expect(inner.flowKey.key == want.key && inner.flowKey.reversed == want.reversed)
        }
    }

    /// RFC 792's minimum quote: the IP header and 8 bytes of the TCP header.
    @Test func minimalTCPQuote() throws {
        let original = T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10", payload: T.tcp(sport: 40000, dport: 80, seq: 77, flags: .syn))
        let q = try quoted(Array(original[0..<28])).get()
        #expect(q.sourcePort == 40000 && q.destinationPort == 80 && q.tcpSequence == 77 && !q.hasTransportHeader)
        #expect(q.totalLength == 28)
        #expect(quoted(Array(original[0..<27])) == .failure(.truncated(needed: 28, have: 27)))
        #expect(quoted(Array(original[0..<19])) == .failure(.truncated(needed: 20, have: 19)))
        // The strict parser refuses the same bytes.
        #expect(parseError(Array(original[0..<28])) == .truncated(needed: 40, have: 28))
    }

    @Test func isICMPError() throws {
        #expect(try parsed(T.ipv4(proto: 1, src: "10.0.0.1", dst: "10.0.0.2", payload: T.icmp(type: 11))).isICMPError)
        #expect(!(try parsed(T.ipv4(proto: 1, src: "10.0.0.1", dst: "10.0.0.2", payload: T.icmp(type: 8))).isICMPError))
        #expect(try parsed(T.ipv6(proto: 58, src: "fd99::2", dst: "2001:db8::1", payload: T.icmp(type: 2))).isICMPError)
        #expect(!(try parsed(T.ipv6(proto: 58, src: "fd99::2", dst: "2001:db8::1", payload: T.icmp(type: 128))).isICMPError))
    }

    /// Every prefix of every corpus packet through the lenient parser: never a crash, offsets in
    /// bounds, and ports equal to the strict parse once 8 transport bytes are there.
    @Test func everyPrefixQuoted() throws {
        for (name, bytes) in T.corpus {
            let full = try parsed(bytes)
            for n in 0...bytes.count {
                guard case .success(let q) = quoted(Array(bytes[0..<n])) else { continue }
                #expect(q.payloadOffset <= q.totalLength && q.totalLength <= n, "\(name) prefix \(n)")
                if full.hasTransportHeader && (full.proto == .tcp || full.proto == .udp) {
                    #expect(n >= full.transportOffset + 8, "\(name) prefix \(n)")
                    #expect(q.sourcePort == full.sourcePort && q.destinationPort == full.destinationPort, "\(name) prefix \(n)")
                }
            }
        }
    }
}
