import Core
import Testing
@testable import Packet

/// The slow model of per-owner accounting: the flow table's reference model plus an owner per
/// key, the owner's cap and the full-table rule (an expired LRU flow goes, else the inserting
/// owner's own least recently used flow, else the new flow is refused).
struct SlowOwnedFlowTable {
    var base: SlowFlowTable
    var owner: [FlowKey: UInt32] = [:]
    var refusedCap: UInt64 = 0
    var refusedFull: UInt64 = 0

    init(capacity: Int) { base = SlowFlowTable(capacity: capacity) }

    func count(_ o: UInt32) -> Int { owner.values.filter { $0 == o }.count }

    mutating func end(_ k: FlowKey, _ reason: FlowEndReason) -> FlowRecord {
        let o = owner.removeValue(forKey: k) ?? 0
        var record = base.end(k, reason)
        record.owner = o  // an ended flow names the owner it was accounted to
        return record
    }

    mutating func track(_ k: FlowKey, _ reversed: Bool, _ length: Int, _ flags: TCPFlags, _ now: Int64, owner o: UInt32,
                        maxFlows: Int, allowNew: Bool) -> (opened: Bool, isReply: Bool, ended: FlowRecord?)?
    {
        var ended: FlowRecord? = nil
        if let e = base.entries[k], base.expired(e, now) { ended = end(k, .expired) }
        if base.entries[k] == nil {
            if !allowNew || count(o) >= maxFlows { refusedCap += 1; return nil }
            if base.entries.count == base.capacity {
                let tail = base.lru.last!
                if base.expired(base.entries[tail]!, now) {
                    ended = end(tail, .expired)
                } else if let own = base.lru.last(where: { owner[$0] == o }) {
                    ended = end(own, .evicted)
                } else {
                    refusedFull += 1
                    return nil
                }
            }
            owner[k] = o
            // The base model opens it (the table has room now).
            let r = base.track(k, reversed, length, flags, now)
            return (r.opened, r.isReply, ended)
        }
        let r = base.track(k, reversed, length, flags, now)
        return (r.opened, r.isReply, ended ?? r.ended)
    }
}

@Suite struct FlowTableOwnerTests {
    @Test func fiftyFirstFlowRefusedAtMaxFlows50() {
        let t = FlowTable(capacity: 1024)
        for i in 0..<50 {
            #expect(t.track(key(i).0, reversed: false, length: 1, now: 0, owner: 7, maxFlows: 50)?.opened == true)
        }
        #expect(t.track(key(50).0, reversed: false, length: 1, now: 0, owner: 7, maxFlows: 50) == nil)
        #expect(t.lastRefusal == .ownerCap && t.stats.refusedCap == 1 && t.flowCount(owner: 7) == 50)
        // Existing flows go on; another owner is not affected.
        #expect(t.track(key(3).0, reversed: true, length: 1, now: 1, owner: 7, maxFlows: 50)?.opened == false)
        #expect(t.track(key(60).0, reversed: false, length: 1, now: 1, owner: 8, maxFlows: 50)?.opened == true)
        // A flow ends: room for one more.
        t.remove(t.lookup(key(0).0, now: 1).handle!)
        #expect(t.track(key(50).0, reversed: false, length: 1, now: 2, owner: 7, maxFlows: 50)?.opened == true)
    }

    @Test func aFloodingOwnerNeverEvictsAnothersFlows() {
        let t = FlowTable(capacity: 600)
        // Owner 2 holds 500 flows; owner 1 floods with 10 000 new ones.
        for i in 0..<500 { _ = t.track(key(i, v6: true).0, reversed: false, length: 1, now: 0, owner: 2) }
        var refused = 0
        for i in 0..<10_000 {
            if t.track(key(1000 + i).0, reversed: false, length: 1, now: 1, owner: 1) == nil { refused += 1 }
        }
        #expect(refused == 0)  // owner 1 recycles its own 100 slots
        #expect(t.flowCount(owner: 2) == 500 && t.flowCount(owner: 1) == 100 && t.stats.evicted == 9_900)
        for i in 0..<500 { #expect(t.lookup(key(i, v6: true).0, now: 2).handle != nil) }
        // A third owner with no flow of its own, table full of live flows: refused.
        #expect(t.track(key(20_000, proto: .tcp).0, reversed: false, length: 1, now: 2, owner: 3) == nil)
        #expect(t.lastRefusal == .tableFull && t.stats.refusedFull == 1)
        // Once a flow expired (LRU tail), anyone may take its slot.
        let later: Int64 = 1 + 600_000
        #expect(t.track(key(20_000, proto: .tcp).0, reversed: false, length: 1, now: later, owner: 3)?.ended?.reason == .expired)
    }

    @Test(arguments: [(UInt64(11), 16), (12, 64), (13, 5)])
    func randomAgainstSlowModel(seed: UInt64, capacity: Int) {
        var rng = SplitMix(seed: seed)
        let table = FlowTable(capacity: capacity, hashSeed: rng.next(), owners: 8)
        var model = SlowOwnedFlowTable(capacity: capacity)
        let pool: [FlowKey] = (0..<(capacity * 3)).map { i in key(i, proto: i % 3 == 0 ? .tcp : .udp, v6: i % 5 == 0).0 }
        var now: Int64 = 0
        for step in 0..<6_000 {
            let op = rng.next() % 100
            if op < 8 {
                now += Int64(rng.next() % 40_000)
            } else if op < 85 {
                let k = pool[Int(rng.next() % UInt64(pool.count))]
                let o = UInt32(rng.next() % 4)
                let cap = rng.next() % 3 == 0 ? Int(rng.next() % UInt64(capacity)) : Int.max
                let allow = rng.next() % 10 != 0
                let reversed = rng.next() % 2 == 0
                let got = table.track(k, reversed: reversed, length: 100, tcpFlags: .ack, now: now, owner: o,
                                      maxFlows: cap, allowNew: allow)
                let want = model.track(k, reversed, 100, .ack, now, owner: o, maxFlows: cap, allowNew: allow)
                #expect((got == nil) == (want == nil), "step \(step)")
                if let got, let want {
                    #expect(got.opened == want.opened && got.isReply == want.isReply, "step \(step)")
                    #expect(got.ended == want.ended, "step \(step)")
                    #expect(table[got.handle] == model.base.entries[k], "step \(step)")
                } else if got == nil {
                    // A refusal may still have ended the same key's expired entry.
                    _ = table.lastRefusedEnded
                }
            } else if op < 92 {
                let k = pool[Int(rng.next() % UInt64(pool.count))]
                if let h = table.lookup(k, now: now).handle {
                    #expect(table.remove(h) == model.end(k, .removed), "step \(step)")
                } else if let e = model.base.entries[k], model.base.expired(e, now) {
                    _ = model.end(k, .expired)
                }
            } else {
                table.expire(now: now, budget: Int(rng.next() % UInt64(capacity + 1))) { rec in
                    #expect(rec == model.end(rec.entry.key, .expired), "step \(step)")
                }
            }
            #expect(table.count == model.base.entries.count, "step \(step)")
            #expect(table.stats.refusedCap == model.refusedCap && table.stats.refusedFull == model.refusedFull, "step \(step)")
            for o in UInt32(0)..<4 { #expect(table.flowCount(owner: o) == model.count(o), "step \(step) owner \(o)") }
            if step % 50 == 0 {
                var order: [FlowKey] = []
                table.forEach { h, e in
                    order.append(e.key)
                    #expect(table.owner(of: h) == model.owner[e.key])
                }
                #expect(order == model.base.lru, "step \(step)")
            }
        }
        #expect(model.refusedCap > 0 && model.base.stats.evicted > 0)
    }
}
