import Core
import Testing
@testable import Packet

/// The slow, obviously right flow table: a dictionary plus an explicit LRU array (most recent
/// first), scanning everything on every operation.
struct SlowFlowTable {
    let capacity: Int
    let timeouts = FlowTimeouts()
    var entries: [FlowKey: FlowEntry] = [:]
    var lru: [FlowKey] = []
    var nextID: UInt64 = 1
    var stats = FlowTableStats()

    func expired(_ e: FlowEntry, _ now: Int64) -> Bool { now - e.lastSeen >= timeouts.timeout(for: e) }

    mutating func end(_ k: FlowKey, _ reason: FlowEndReason) -> FlowRecord {
        let e = entries.removeValue(forKey: k)!
        lru.removeAll { $0 == k }
        switch reason {
        case .expired: stats.expired += 1
        case .evicted: stats.evicted += 1
        case .removed: stats.removed += 1
        }
        return FlowRecord(entry: e, reason: reason)
    }

    mutating func track(_ k: FlowKey, _ reversed: Bool, _ length: Int, _ flags: TCPFlags, _ now: Int64)
        -> (opened: Bool, isReply: Bool, ended: FlowRecord?)
    {
        var ended: FlowRecord? = nil
        if let e = entries[k], expired(e, now) { ended = end(k, .expired) }
        var opened = false
        if entries[k] == nil {
            if entries.count == capacity {
                let victim = lru.last!
                ended = end(victim, expired(entries[victim]!, now) ? .expired : .evicted)
            }
            entries[k] = FlowEntry(key: k, id: nextID, originReversed: reversed, now: now, tcpFlags: flags)
            nextID += 1
            stats.opened += 1
            opened = true
        }
        var e = entries[k]!
        let isReply = reversed != e.originReversed
        if isReply { e.packetsReply += 1; e.bytesReply += UInt64(length) } else { e.packetsOriginal += 1; e.bytesOriginal += UInt64(length) }
        e.lastSeen = now
        if !opened && k.proto == .tcp { e.tcp.update(flags: flags, isReply: isReply) }
        entries[k] = e
        lru.removeAll { $0 == k }
        lru.insert(k, at: 0)
        return (opened, isReply, ended)
    }
}

@Suite struct FlowTableReferenceTests {
    /// Random packets, time steps, lookups, verdicts, removals and sweeps against the slow model;
    /// every result and, now and then, the whole content in LRU order must agree.
    @Test(arguments: [(UInt64(1), 16), (2, 64), (3, 5)])
    func randomAgainstSlowModel(seed: UInt64, capacity: Int) {
        var rng = SplitMix(seed: seed)
        let table = FlowTable(capacity: capacity, hashSeed: rng.next())
        var model = SlowFlowTable(capacity: capacity)
        let protos: [IPProtocol] = [.tcp, .udp, .icmp, IPProtocol(rawValue: 47)]
        let pool: [FlowKey] = (0..<(capacity * 3)).map { i in
            key(i, proto: protos[i % protos.count], v6: i % 5 == 0).0
        }
        let flagChoices: [TCPFlags] = [.syn, [.syn, .ack], .ack, [.ack, .psh], [.fin, .ack], .rst, [.rst, .ack]]
        var now: Int64 = 0
        for step in 0..<6_000 {
            let op = rng.next() % 100
            if op < 10 {
                now += Int64(rng.next() % 40_000)  // up to 40 s
            } else if op < 75 {
                let k = pool[Int(rng.next() % UInt64(pool.count))]
                let reversed = rng.next() % 2 == 0
                let len = Int(rng.next() % 1500)
                let flags = flagChoices[Int(rng.next() % UInt64(flagChoices.count))]
                let got = table.track(k, reversed: reversed, length: len, tcpFlags: flags, now: now)
                let want = model.track(k, reversed, len, flags, now)
                #expect(got.opened == want.opened && got.isReply == want.isReply, "step \(step)")
                #expect(got.ended == want.ended, "step \(step): ended \(String(describing: got.ended)) want \(String(describing: want.ended))")
                #expect(table[got.handle] == model.entries[k], "step \(step)")
                if got.opened && rng.next() % 2 == 0 {
                    table.setVerdict(got.handle, generation: 3, action: 1, ruleIndex: Int32(step))
                    model.entries[k]!.verdictGeneration = 3
                    model.entries[k]!.verdictAction = 1
                    model.entries[k]!.verdictRuleIndex = Int32(step)
                }
            } else if op < 85 {
                let k = pool[Int(rng.next() % UInt64(pool.count))]
                let got = table.lookup(k, now: now)
                var wantEnded: FlowRecord? = nil
                if let e = model.entries[k], model.expired(e, now) { wantEnded = model.end(k, .expired) }
                #expect(got.ended == wantEnded, "step \(step)")
                #expect((got.handle != nil) == (model.entries[k] != nil), "step \(step)")
            } else if op < 90 {
                let k = pool[Int(rng.next() % UInt64(pool.count))]
                if let h = table.lookup(k, now: now).handle {
                    let rec = table.remove(h)
                    // The model ended it on lookup only if expired; it was not, so remove it now.
                    #expect(rec == model.end(k, .removed), "step \(step)")
                } else if let e = model.entries[k], model.expired(e, now) {
                    _ = model.end(k, .expired)
                }
            } else {
                // A partial sweep: everything it ends must be expired in the model.
                let budget = Int(rng.next() % UInt64(capacity + 1))
                table.expire(now: now, budget: budget) { rec in
                    let e = model.entries[rec.entry.key]
                    #expect(e != nil && model.expired(e!, now) && rec.reason == .expired, "step \(step)")
                    #expect(rec == model.end(rec.entry.key, .expired), "step \(step)")
                }
            }
            #expect(table.count == model.entries.count && table.stats == model.stats, "step \(step)")
            if step % 100 == 0 {
                var order: [FlowKey] = []
                table.forEach { h, e in
                    order.append(e.key)
                    #expect(model.entries[e.key] == e && table[h] == e)
                }
                #expect(order == model.lru, "step \(step)")
            }
        }
        #expect(model.stats.evicted > 0 && model.stats.expired > 0 && model.stats.removed > 0)
    }
}
