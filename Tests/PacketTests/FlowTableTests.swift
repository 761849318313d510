import Core
import Testing
@testable import Packet

func key(_ i: Int, proto: IPProtocol = .udp, v6: Bool = false) -> (FlowKey, Bool) {
    let src = v6 ? IPAddress(v6High: 0xFD99 << 48, low: UInt64(i)) : IPAddress(v4: 0x0A63_0000 | UInt32(i & 0xFFFF))
    let dst = v6 ? IPAddress(v6High: 0x2001_0DB8 << 32, low: 1) : IPAddress(v4: 0xC000_020A)
    return FlowKey.oriented(proto: proto, source: src, sourcePort: UInt16(40000 + i % 1000), destination: dst, destinationPort: 443)
}

/// The other direction's bit of the same key.
func reply(_ k: (FlowKey, Bool)) -> (FlowKey, Bool) { (k.0, !k.1) }

@Suite struct FlowTableTests {
    @Test func countsBothDirectionsAndAssignsIDs() {
        let t = FlowTable(capacity: 8)
        let a = key(1), b = key(2)
        let r1 = t.track(a.0, reversed: a.1, length: 100, now: 0)
        #expect(r1.opened && !r1.isReply && r1.ended == nil)
        let r2 = t.track(a.0, reversed: !a.1, length: 1500, now: 5)
        #expect(!r2.opened && r2.isReply && r2.handle == r1.handle)
        let r3 = t.track(b.0, reversed: b.1, length: 60, now: 6)
        let e = t[r1.handle]
        #expect(e.id == 1 && t[r3.handle].id == 2)
        #expect(e.packetsOriginal == 1 && e.bytesOriginal == 100 && e.packetsReply == 1 && e.bytesReply == 1500)
        #expect(e.firstSeen == 0 && e.lastSeen == 5)
        #expect(e.originator == IPAddress(v4: 0x0A63_0001) && e.responderPort == 443)
        #expect(t.count == 2 && t.stats.opened == 2)
    }

    @Test func verdictSlot() {
        let t = FlowTable(capacity: 4)
        let a = key(1)
        let h = t.track(a.0, reversed: a.1, length: 1, now: 0).handle
        #expect(t[h].verdictGeneration == 0 && t[h].verdictRuleIndex == -1)
        t.setVerdict(h, generation: 7, action: 2, ruleIndex: 41)
        let again = t.track(a.0, reversed: a.1, length: 1, now: 1)
        #expect(!again.opened && t[again.handle].verdictGeneration == 7 && t[again.handle].verdictAction == 2
                && t[again.handle].verdictRuleIndex == 41)
    }

    @Test func udpTimeoutGrowsOnceReplied() {
        let t = FlowTable(capacity: 4)
        let a = key(1)
        _ = t.track(a.0, reversed: a.1, length: 1, now: 0)
        #expect(t.lookup(a.0, now: 29_999).handle != nil)
        let gone = t.lookup(a.0, now: 30_000)
        #expect(gone.handle == nil && gone.ended?.reason == .expired && gone.ended?.entry.id == 1)
        _ = t.track(a.0, reversed: a.1, length: 1, now: 100_000)
        _ = t.track(a.0, reversed: !a.1, length: 1, now: 100_000)
        #expect(t.lookup(a.0, now: 279_999).handle != nil)
        #expect(t.lookup(a.0, now: 280_000).handle == nil)
        #expect(t.stats.expired == 2 && t.count == 0)
    }

    @Test func tcpTimeoutsFollowState() {
        let t = FlowTable(capacity: 4)
        let a = key(1, proto: .tcp)
        _ = t.track(a.0, reversed: a.1, length: 60, tcpFlags: .syn, now: 0)
        #expect(t.lookup(a.0, now: 29_999).handle != nil)
        _ = t.track(a.0, reversed: !a.1, length: 60, tcpFlags: [.syn, .ack], now: 10)
        _ = t.track(a.0, reversed: a.1, length: 60, tcpFlags: .ack, now: 20)
        let h = t.lookup(a.0, now: 20).handle!
        #expect(t[h].tcp.state == .established)
        #expect(t.lookup(a.0, now: 4 * 86_400_000).handle != nil)  // days later, still there
        _ = t.track(a.0, reversed: a.1, length: 60, tcpFlags: [.rst], now: 1_000_000)
        #expect(t.lookup(a.0, now: 1_009_999).handle != nil)
        #expect(t.lookup(a.0, now: 1_010_000).ended?.entry.tcp.state == .closed)
    }

    @Test func icmpAndOtherTimeouts() {
        let t = FlowTable(capacity: 4)
        let i = key(1, proto: .icmp), g = key(2, proto: IPProtocol(rawValue: 47))
        _ = t.track(i.0, reversed: i.1, length: 84, now: 0)
        _ = t.track(g.0, reversed: g.1, length: 84, now: 0)
        #expect(t.lookup(i.0, now: 30_000).handle == nil)
        #expect(t.lookup(g.0, now: 599_999).handle != nil)
        #expect(t.lookup(g.0, now: 600_000).handle == nil)
    }

    @Test func evictsLeastRecentlyUsedWhenFull() {
        let t = FlowTable(capacity: 3)
        for i in 0..<3 { _ = t.track(key(i).0, reversed: key(i).1, length: 1, now: Int64(i)) }
        _ = t.track(key(0).0, reversed: key(0).1, length: 1, now: 10)  // 0 becomes most recent; 1 is LRU
        let r = t.track(key(3).0, reversed: key(3).1, length: 1, now: 11)
        #expect(r.opened && r.ended?.reason == .evicted && r.ended?.entry.key == key(1).0)
        #expect(t.stats.evicted == 1 && t.count == 3)
        var order: [FlowKey] = []
        t.forEach { _, e in order.append(e.key) }
        #expect(order == [key(3).0, key(0).0, key(2).0])
        // An LRU entry that has already timed out leaves as expired, not evicted.
        let r2 = t.track(key(4).0, reversed: key(4).1, length: 1, now: 40_000)
        #expect(r2.ended?.reason == .expired && r2.ended?.entry.key == key(2).0)
    }

    @Test func sweepFindsEveryExpiredEntryWithinCapacityOverBudget() {
        let t = FlowTable(capacity: 100)
        for i in 0..<100 { _ = t.track(key(i).0, reversed: key(i).1, length: 1, now: 0) }
        for i in 0..<50 { _ = t.track(key(i).0, reversed: !key(i).1, length: 1, now: 1) }  // replied: 180 s
        var ended: [FlowRecord] = []
        for _ in 0..<10 { t.expire(now: 30_000, budget: 10) { ended.append($0) } }
        #expect(ended.count == 50 && ended.allSatisfy { $0.reason == .expired && $0.entry.packetsReply == 0 })
        #expect(t.count == 50 && t.expire(now: 30_000, budget: 1000) == 0)
        #expect(t.expire(now: 181_001, budget: 1000) == 50 && t.count == 0)
    }

    @Test func removeAndSlotReuse() {
        let t = FlowTable(capacity: 2)
        let h = t.track(key(1).0, reversed: key(1).1, length: 1, now: 0).handle
        let rec = t.remove(h)
        #expect(rec.reason == .removed && t.count == 0 && t.stats.removed == 1)
        let again = t.track(key(1).0, reversed: key(1).1, length: 1, now: 0)
        #expect(again.opened && t[again.handle].id == 2)
    }

    /// Many keys in one bucket chain still resolve (forced by a capacity-1-ish tiny table plus many
    /// removals and inserts across chains).
    @Test func chainsSurviveRemovalsInTheMiddle() {
        let t = FlowTable(capacity: 64)
        var handles: [Int: FlowHandle] = [:]
        for i in 0..<64 { handles[i] = t.track(key(i, v6: true).0, reversed: false, length: 1, now: 0).handle }
        for i in stride(from: 0, to: 64, by: 3) { t.remove(handles[i]!) }
        for i in 0..<64 {
            let found = t.lookup(key(i, v6: true).0, now: 1).handle
            #expect((found != nil) == (i % 3 != 0))
        }
    }
}

@Suite struct FlowTableLayoutTests {
    /// The slot layout the table's cache-line argument relies on.
    @Test func slotIsTwoCacheLines() {
        #expect(MemoryLayout<FlowEntry>.size == 112)
        #expect(MemoryLayout<FlowTable.Slot>.stride == 128)
        #expect(MemoryLayout<FlowTable.Slot>.offset(of: \.entry) == 16)
    }
}
