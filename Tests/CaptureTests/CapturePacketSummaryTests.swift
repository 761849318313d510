import Core
import Packet
import Testing
@testable import Capture

@Suite struct CapturePacketSummaryTests {
    private func parse(_ bytes: [UInt8]) -> CapturePacketSummary? { bytes.withUnsafeBytes { CapturePacketSummary(packet: $0) } }

    @Test func ipv4TCP() throws {
        let s = try #require(parse(ipv4Packet(protocol: 6, source: 0x0A63_0002, destination: 0xC0A8_0105, sourcePort: 40000, destinationPort: 443, payload: 0)))
        #expect(s == CapturePacketSummary(ipVersion: 4, ipProtocol: 6, sourceLow: 0x0A63_0002, destinationLow: 0xC0A8_0105, sourcePort: 40000, destinationPort: 443))
    }

    @Test func ipv6UDP() throws {
        let s = try #require(parse(ipv6UDPPacket(sourceLow: 2, destinationLow: 5, sourcePort: 6000, destinationPort: 443, payload: 3)))
        #expect(s == CapturePacketSummary(ipVersion: 6, ipProtocol: 17, sourceHigh: 0xFD99_0000_0000_0000, sourceLow: 2,
                                          destinationHigh: 0xFD99_0000_0000_0000, destinationLow: 5, sourcePort: 6000, destinationPort: 443))
    }

    @Test func ipv6ExtensionHeadersAreSkipped() throws {
        var p = ipv6UDPPacket(sourceLow: 2, destinationLow: 5, sourcePort: 6000, destinationPort: 443, payload: 0)
        // Insert an 8-byte hop-by-hop header (next header UDP) after the fixed header.
        p[6] = 0
        p.insert(contentsOf: [17, 0, 0, 0, 0, 0, 0, 0], at: 40)
        let s = try #require(parse(p))
        #expect(s.ipProtocol == 17 && s.sourcePort == 6000 && s.destinationPort == 443)
    }

    @Test func laterFragmentsHaveNoPorts() throws {
        var p = ipv4Packet(protocol: 17, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 8)
        p[6] = 0x00; p[7] = 0x10  // fragment offset 16 * 8 bytes
        let s = try #require(parse(p))
        #expect(s.sourcePort == 0 && s.destinationPort == 0)
    }

    @Test func everyTruncationIsHandled() {
        let packets = [
            ipv4Packet(protocol: 6, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 0),
            ipv6UDPPacket(sourceLow: 2, destinationLow: 5, sourcePort: 6000, destinationPort: 443, payload: 0),
        ]
        for full in packets {
            let minimum = full[0] >> 4 == 4 ? 20 : 40
            for length in 0..<full.count {
                let s = parse(Array(full.prefix(length)))
                if length < minimum {
                    #expect(s == nil, "length \(length)")
                } else {
                    // Addresses from the fixed header; ports only once the 4 port bytes are there.
                    #expect(s != nil)
                    #expect((s?.destinationPort == 0) == (length < minimum + 4), "length \(length)")
                }
            }
        }
    }

    @Test func malformedHeadersAreRejectedOrHarmless() {
        #expect(parse([]) == nil)
        #expect(parse([0x55] + [UInt8](repeating: 0, count: 40)) == nil)  // version 5
        #expect(parse([0x44] + [UInt8](repeating: 0, count: 40)) == nil)  // IHL 4 < 5
        var longIHL = ipv4Packet(protocol: 6, source: 1, destination: 2, sourcePort: 3, destinationPort: 4, payload: 0)
        longIHL[0] = 0x4F  // 60-byte header claimed in a 40-byte packet: no ports, no crash
        #expect(parse(longIHL)?.sourcePort == 0)
        // IPv6 extension header chain running off the end.
        var chain = ipv6UDPPacket(sourceLow: 2, destinationLow: 5, sourcePort: 1, destinationPort: 2, payload: 0)
        chain[6] = 0
        chain[40] = 60; chain[41] = 255
        #expect(parse(chain)?.sourcePort == 0)
    }

    @Test func flowKeyMatchesBothDirectionsOnly() {
        let key = CaptureFlowKey(ipVersion: 4, ipProtocol: 6, aLow: 1, aPort: 10, bLow: 2, bPort: 20)
        let forward = CapturePacketSummary(ipVersion: 4, ipProtocol: 6, sourceLow: 1, destinationLow: 2, sourcePort: 10, destinationPort: 20)
        var backward = forward
        (backward.sourceLow, backward.destinationLow, backward.sourcePort, backward.destinationPort) = (2, 1, 20, 10)
        #expect(key.matches(forward) && key.matches(backward))
        var other = forward; other.sourcePort = 11
        var udp = forward; udp.ipProtocol = 17
        var v6 = forward; v6.ipVersion = 6
        var crossed = forward; crossed.destinationPort = 10
        #expect(![other, udp, v6, crossed].contains(where: key.matches))
        #expect(CaptureFlowKey(forward) == key)
    }

    /// An ICMP (IPv4, proto 1) or ICMPv6 (IPv6, proto 58) message with an 8-byte header.
    private func icmpPacket(v6: Bool, type: UInt8, code: UInt8 = 0, id: UInt16 = 0, reply: Bool = false) -> [UInt8] {
        let icmp: [UInt8] = [type, code, 0, 0, UInt8(id >> 8), UInt8(id & 0xFF), 0, 1] + [UInt8](repeating: 0x11, count: 8)
        if v6 {
            var p = ipv6UDPPacket(sourceLow: reply ? 5 : 2, destinationLow: reply ? 2 : 5, sourcePort: 0, destinationPort: 0, payload: 0)
            p.removeLast(8)
            p[4] = 0; p[5] = UInt8(icmp.count); p[6] = 58
            return p + icmp
        }
        var p = ipv4Packet(protocol: 1, source: reply ? 0x0101_0101 : 0x0A63_0002, destination: reply ? 0x0A63_0002 : 0x0101_0101,
                           sourcePort: 0, destinationPort: 0, payload: 0)
        p.removeLast(8)
        let total = 20 + icmp.count
        p[2] = UInt8(total >> 8); p[3] = UInt8(total & 0xFF)
        return p + icmp
    }

    /// The summary's ports are the flow table's, for every protocol (one definition: FlowKey).
    @Test func portsAreTheFlowTablesIncludingICMP() throws {
        let packets = [
            ipv4Packet(protocol: 6, source: 1, destination: 2, sourcePort: 40000, destinationPort: 443, payload: 0),
            ipv4Packet(protocol: 17, source: 1, destination: 2, sourcePort: 5353, destinationPort: 53, payload: 4),
            ipv6UDPPacket(sourceLow: 2, destinationLow: 5, sourcePort: 6000, destinationPort: 443, payload: 3),
            icmpPacket(v6: false, type: 8, id: 0x4242),               // echo request
            icmpPacket(v6: false, type: 0, id: 0x4242, reply: true),  // echo reply
            icmpPacket(v6: false, type: 13, id: 7),                   // timestamp: type/code
            icmpPacket(v6: true, type: 128, id: 9),
            icmpPacket(v6: true, type: 129, id: 9, reply: true),
            icmpPacket(v6: true, type: 135),                          // neighbour solicitation
        ]
        for bytes in packets {
            let s = try #require(parse(bytes))
            let parsed = try bytes.withUnsafeBytes { try PacketParser.parse($0) }
            let (key, reversed) = parsed.flowKey
            let (sp, dp) = reversed ? (key.portB, key.portA) : (key.portA, key.portB)
            #expect(s.sourcePort == sp && s.destinationPort == dp, "\(key): summary \(s.sourcePort)/\(s.destinationPort)")
        }
        // A ping and its reply are one capture flow, keyed by the echo identifier.
        let request = try #require(parse(packets[3]))
        let reply = try #require(parse(packets[4]))
        #expect(request.sourcePort == 0x4242 && request.destinationPort == 0x4242)
        #expect(CaptureFlowKey(request).matches(reply))
        #expect(!CaptureFlowKey(request).matches(try #require(parse(icmpPacket(v6: false, type: 0, id: 0x4243, reply: true)))))
    }
}
