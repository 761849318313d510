import Core
import Testing
@testable import Packet

@Suite struct TCPTrackerTests {
    typealias S = TCPTracker.State

    /// Runs packets (flags, isReply) from a first packet and returns the states after each.
    func run(_ first: TCPFlags, _ rest: [(TCPFlags, Bool)]) -> [S] {
        var t = TCPTracker(firstFlags: first)
        var states = [t.state]
        for (f, r) in rest {
            t.update(flags: f, isReply: r)
            states.append(t.state)
        }
        return states
    }

    @Test func handshakeAndClose() {
        #expect(run(.syn, [([.syn, .ack], true), (.ack, false), ([.ack, .psh], true), ([.fin, .ack], false), (.ack, true),
                           ([.fin, .ack], true), (.ack, false)])
                == [.synSent, .synReceived, .established, .established, .closing, .closing, .closing, .closing])
    }

    @Test func oneSidedTrafficNeverEstablishes() {
        #expect(run(.syn, [(.syn, false), (.ack, false), (.syn, false)]) == [.synSent, .synSent, .synSent, .synSent])
        #expect(run(.ack, [(.ack, false), ([.ack, .psh], false)]) == [.unreplied, .unreplied, .unreplied])
    }

    @Test func midstreamPickupEstablishesOnReply() {
        #expect(run([.ack, .psh], [(.ack, true)]) == [.unreplied, .established])
    }

    @Test func resetClosesFromAnyState() {
        #expect(run(.syn, [(.rst, true)]) == [.synSent, .closed])
        #expect(run(.syn, [([.syn, .ack], true), (.ack, false), ([.rst, .ack], false)]).last == .closed)
        #expect(run(.rst, []) == [.closed])
    }

    @Test func finMaskAndReuse() {
        var t = TCPTracker(firstFlags: .syn)
        t.update(flags: [.syn, .ack], isReply: true)
        t.update(flags: .ack, isReply: false)
        t.update(flags: [.fin, .ack], isReply: true)
        #expect(t.finMask == 2 && t.state == .closing)
        t.update(flags: [.fin, .ack], isReply: false)
        #expect(t.finMask == 3)
        t.update(flags: .syn, isReply: false)  // port reuse
        #expect(t.state == .synSent && t.finMask == 0)
    }
}
