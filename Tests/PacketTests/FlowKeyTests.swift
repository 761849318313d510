import Core
import Testing
@testable import Packet

@Suite struct FlowKeyTests {
    typealias T = TestPackets

    @Test func packetAndReplyShareAKey() throws {
        let out = try parsed(T.ipv4(proto: 6, src: "10.99.0.2", dst: "192.0.2.10", payload: T.tcp(sport: 40000, dport: 443, flags: .syn)))
        let back = try parsed(T.ipv4(proto: 6, src: "192.0.2.10", dst: "10.99.0.2", payload: T.tcp(sport: 443, dport: 40000, flags: [.syn, .ack])))
        let (k1, r1) = out.flowKey
        let (k2, r2) = back.flowKey
        #expect(k1 == k2 && k1.hash64 == k2.hash64 && r1 != r2)
        #expect(k1.addressA == IPAddress("10.99.0.2") && k1.portA == 40000 && !r1)
        #expect(k1.description == "tcp 10.99.0.2:40000 <-> 192.0.2.10:443")
    }

    @Test func samePortsDifferentAddressOrder() {
        let a = IPAddress("fd99::2")!, b = IPAddress("fd99::1")!
        let (k, rev) = FlowKey.oriented(proto: .udp, source: a, sourcePort: 53, destination: b, destinationPort: 53)
        #expect(rev && k.addressA == b && k.isIPv6)
        #expect(k.description == "udp [fd99::1]:53 <-> [fd99::2]:53")
        // Same address both ends: ordered by port.
        let (k2, rev2) = FlowKey.oriented(proto: .udp, source: a, sourcePort: 9, destination: a, destinationPort: 7)
        #expect(rev2 && k2.portA == 7)
    }

    @Test func everyFieldMatters() {
        let base = FlowKey(proto: .tcp, source: IPAddress("10.0.0.1")!, sourcePort: 1, destination: IPAddress("10.0.0.2")!, destinationPort: 2)
        let variants = [
            FlowKey(proto: .udp, source: IPAddress("10.0.0.1")!, sourcePort: 1, destination: IPAddress("10.0.0.2")!, destinationPort: 2),
            FlowKey(proto: .tcp, source: IPAddress("10.0.0.3")!, sourcePort: 1, destination: IPAddress("10.0.0.2")!, destinationPort: 2),
            FlowKey(proto: .tcp, source: IPAddress("10.0.0.1")!, sourcePort: 3, destination: IPAddress("10.0.0.2")!, destinationPort: 2),
            FlowKey(proto: .tcp, source: IPAddress("10.0.0.1")!, sourcePort: 1, destination: IPAddress("10.0.0.2")!, destinationPort: 3),
            // The IPv6 address with the same low bits as the IPv4 one is another key.
            FlowKey(proto: .tcp, source: IPAddress("::a00:1")!, sourcePort: 1, destination: IPAddress("::a00:2")!, destinationPort: 2),
        ]
        for v in variants {
            #expect(v != base)
            #expect(v.hash64 != base.hash64)
        }
    }

    @Test func icmpEchoRequestAndReplyShareAKey() throws {
        let req = try parsed(T.ipv4(proto: 1, src: "10.99.0.2", dst: "1.1.1.1", payload: T.icmp(type: 8, id: 77)))
        let rep = try parsed(T.ipv4(proto: 1, src: "1.1.1.1", dst: "10.99.0.2", payload: T.icmp(type: 0, id: 77)))
        #expect(req.flowKey.key == rep.flowKey.key && req.flowKey.key.portA == 77)
        let other = try parsed(T.ipv4(proto: 1, src: "10.99.0.2", dst: "1.1.1.1", payload: T.icmp(type: 8, id: 78)))
        #expect(other.flowKey.key != req.flowKey.key)
        let v6req = try parsed(T.ipv6(proto: 58, src: "fd99::2", dst: "2001:db8::1", payload: T.icmp(type: 128, id: 5)))
        let v6rep = try parsed(T.ipv6(proto: 58, src: "2001:db8::1", dst: "fd99::2", payload: T.icmp(type: 129, id: 5)))
        #expect(v6req.flowKey.key == v6rep.flowKey.key)
        let unreach = try parsed(T.ipv4(proto: 1, src: "10.99.0.2", dst: "1.1.1.1", payload: T.icmp(type: 3, code: 13)))
        #expect(unreach.flowKey.key.portA == 0x030D || unreach.flowKey.key.portB == 0x030D)
    }

    @Test func seedChangesTheHash() {
        let k = FlowKey(proto: .tcp, source: IPAddress("10.0.0.1")!, sourcePort: 1, destination: IPAddress("10.0.0.2")!, destinationPort: 2)
        #expect(k.hash64(seed: 0) == k.hash64)
        #expect(k.hash64(seed: 1) != k.hash64(seed: 2))
    }

    /// The hash spreads sequential keys over buckets (no bucket more than a few times its share).
    @Test func hashSpreads() {
        var buckets = [Int](repeating: 0, count: 1024)
        for i in 0..<16_384 {
            let k = FlowKey(proto: .udp, source: IPAddress(v4: 0x0A00_0000 | UInt32(i >> 4)), sourcePort: UInt16(40000 + (i & 15)),
                            destination: IPAddress(v4: 0x0808_0808), destinationPort: 53)
            buckets[Int(k.hash64 & 1023)] += 1
        }
        #expect(buckets.max()! <= 48)
    }
}
