import Core
import Testing
@testable import Packet

@Suite struct FragmentTrackerTests {
    typealias T = TestPackets

    func first(id: UInt16 = 77, src: String = "10.99.0.2") throws -> ParsedPacket {
        try parsed(T.ipv4(proto: 17, src: src, dst: "8.8.8.8", payload: T.udp(sport: 1000, dport: 53, data: [1, 2, 3, 4]),
                          id: id, moreFragments: true))
    }
    func later(id: UInt16 = 77, src: String = "10.99.0.2") throws -> ParsedPacket {
        try parsed(T.ipv4(proto: 17, src: src, dst: "8.8.8.8", payload: [5, 6, 7, 8], id: id, fragOffset: 16))
    }

    @Test func laterFragmentsJoinTheirFlow() throws {
        let t = FragmentTracker()
        var f = try first()
        #expect(t.resolve(&f, now: 0))
        var l = try later()
        #expect(l.flowKey.key != f.flowKey.key)
        #expect(t.resolve(&l, now: 1_000))
        #expect(l.flowKey.key == f.flowKey.key && l.flowKey.reversed == f.flowKey.reversed)
        #expect(t.unattributable == 0)
    }

    @Test func v6LaterFragment() throws {
        let t = FragmentTracker()
        var f = try parsed(T.ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1", payload: T.tcp(sport: 5, dport: 80, flags: .ack),
                                  ext: [(44, T.fragmentHeader(offset: 0, more: true, id: 9))]))
        var l = try parsed(T.ipv6(proto: 6, src: "fd99::2", dst: "2001:db8::1", payload: [1, 2, 3],
                                  ext: [(44, T.fragmentHeader(offset: 24, more: false, id: 9))]))
        #expect(t.resolve(&f, now: 0) && t.resolve(&l, now: 0))
        #expect(l.sourcePort == 5 && l.destinationPort == 80)
    }

    @Test func unattributable() throws {
        let t = FragmentTracker(slots: 16, lifetime: 30_000)
        var l = try later()
        #expect(!t.resolve(&l, now: 0))  // first not seen yet
        var f = try first()
        #expect(t.resolve(&f, now: 0))
        var other = try later(id: 78)
        #expect(!t.resolve(&other, now: 0))  // another datagram
        var otherSource = try later(src: "10.99.0.3")
        #expect(!t.resolve(&otherSource, now: 0))
        var stale = try later()
        #expect(!t.resolve(&stale, now: 30_000))  // expired
        #expect(t.unattributable == 4)
        var plain = try parsed(T.ipv4(proto: 17, src: "10.0.0.1", dst: "10.0.0.2", payload: T.udp(sport: 1, dport: 2)))
        #expect(t.resolve(&plain, now: 0) && plain.sourcePort == 1)
    }

    @Test func boundedTableOverwrites() throws {
        let t = FragmentTracker(slots: 4)
        for id in 0..<64 {
            var f = try first(id: UInt16(id))
            _ = t.resolve(&f, now: 0)
        }
        #expect(t.overwritten >= 60)
        var last = try later(id: 63)
        #expect(t.resolve(&last, now: 0))
    }
}
