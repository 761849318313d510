import Core
import Testing
@testable import Packet

func learn(_ c: AddressNameCache, _ peer: UInt32, _ a: String, _ name: String, ttl: UInt32, now: Int64) {
    Array(name.utf8).withUnsafeBytes { c.learn(peer: peer, address: IPAddress(a)!, name: $0, ttl: ttl, now: now) }
}

func names(_ c: AddressNameCache, _ peer: UInt32, _ a: String, now: Int64) -> [String] {
    c.names(peer: peer, address: IPAddress(a)!, now: now).map { String(decoding: $0, as: UTF8.self) }
}

/// The slow model: per (peer, address) an ordered list of (name, expiry), LRU by a use counter.
struct SlowNameCache {
    struct Key: Hashable { var peer: UInt32; var address: IPAddress }
    var capacity: Int
    var bytesPerAddress: Int
    var floor: UInt32
    var ceiling: UInt32
    var entries: [Key: [(String, Int64)]] = [:]
    var lastUse: [Key: Int] = [:]
    var clock = 0

    mutating func learn(_ k: Key, _ name: String, ttl: UInt32, now: Int64) {
        let expiry = now + Int64(min(max(ttl, floor), ceiling)) * 1000
        if entries[k] == nil && entries.count == capacity {
            let victim = lastUse.min { $0.value < $1.value }!.key
            entries[victim] = nil
            lastUse[victim] = nil
        }
        clock += 1
        lastUse[k] = clock
        var list = entries[k] ?? []
        if let i = list.firstIndex(where: { $0.0 == name }) {
            list[i].1 = expiry
        } else {
            func size(_ l: [(String, Int64)]) -> Int { l.reduce(0) { $0 + 9 + $1.0.utf8.count } }
            if size(list) + 9 + name.utf8.count > bytesPerAddress { list.removeAll { $0.1 <= now } }
            while size(list) + 9 + name.utf8.count > bytesPerAddress {
                let i = list.indices.min { list[$0].1 < list[$1].1 }!
                list.remove(at: i)
            }
            list.append((name, expiry))
        }
        entries[k] = list
    }

    mutating func lookup(_ k: Key, now: Int64) -> [String] {
        guard var list = entries[k] else { return [] }
        list.removeAll { $0.1 <= now }
        if list.isEmpty {
            entries[k] = nil
            lastUse[k] = nil
            return []
        }
        entries[k] = list
        clock += 1
        lastUse[k] = clock
        return list.map(\.0)
    }
}

@Suite struct AddressNameCacheTests {
    @Test func learnsAndLooksUpPerPeer() {
        let c = AddressNameCache(capacity: 16)
        learn(c, 1, "192.0.2.7", "www.example.com", ttl: 300, now: 0)
        learn(c, 1, "192.0.2.7", "edge.cdn.net", ttl: 300, now: 0)
        learn(c, 2, "192.0.2.7", "other.example", ttl: 300, now: 0)
        #expect(names(c, 1, "192.0.2.7", now: 1000) == ["www.example.com", "edge.cdn.net"])
        #expect(names(c, 2, "192.0.2.7", now: 1000) == ["other.example"])
        #expect(names(c, 3, "192.0.2.7", now: 1000) == [])
        #expect(names(c, 1, "192.0.2.8", now: 1000) == [])
        #expect(c.count == 2)
        // Same name again: one copy, new expiry.
        learn(c, 1, "192.0.2.7", "www.example.com", ttl: 900, now: 0)
        #expect(names(c, 1, "192.0.2.7", now: 600_000) == ["www.example.com"])
        c.forget(peer: 1)
        #expect(names(c, 1, "192.0.2.7", now: 0) == [] && c.count == 1)
    }

    @Test func ttlFloorAndCeiling() {
        let c = AddressNameCache(capacity: 4, ttlFloor: 30, ttlCeiling: 600)
        #expect(c.clampedTTL(0) == 30 && c.clampedTTL(100) == 100 && c.clampedTTL(86_400) == 600)
        learn(c, 1, "2001:db8::1", "zero.example", ttl: 0, now: 10_000)
        #expect(names(c, 1, "2001:db8::1", now: 39_999) == ["zero.example"])
        #expect(names(c, 1, "2001:db8::1", now: 40_000) == [])
        #expect(c.count == 0)  // all names expired: the address is gone
        learn(c, 1, "2001:db8::1", "long.example", ttl: 1_000_000, now: 0)
        #expect(names(c, 1, "2001:db8::1", now: 599_999) == ["long.example"])
        #expect(names(c, 1, "2001:db8::1", now: 600_000) == [])
    }

    @Test func fullAddressReplacesExpiredThenSoonest() {
        // 300 bytes hold three names of 90 bytes (99 with their headers).
        let c = AddressNameCache(capacity: 2, bytesPerAddress: 300)
        func n(_ k: Int) -> String { "\(k)" + String(repeating: "a", count: 81) + ".example" }
        learn(c, 1, "10.0.0.1", n(1), ttl: 100, now: 0)
        learn(c, 1, "10.0.0.1", n(2), ttl: 60, now: 0)
        learn(c, 1, "10.0.0.1", n(3), ttl: 500, now: 0)
        #expect(names(c, 1, "10.0.0.1", now: 0) == [n(1), n(2), n(3)])
        // A fourth: the one expiring soonest (2) makes room.
        learn(c, 1, "10.0.0.1", n(4), ttl: 200, now: 1000)
        #expect(names(c, 1, "10.0.0.1", now: 1000) == [n(1), n(3), n(4)])
        // Once 1 has expired, a fifth takes its place even though 4 expires sooner than 5.
        learn(c, 1, "10.0.0.1", n(5), ttl: 400, now: 100_000)
        #expect(names(c, 1, "10.0.0.1", now: 100_000) == [n(3), n(4), n(5)])
        // The longest name always fits.
        let longest = String(repeating: "b", count: 63) + "." + String(repeating: "c", count: 63) + "."
            + String(repeating: "d", count: 63) + "." + String(repeating: "e", count: 61)
        learn(c, 1, "10.0.0.1", longest, ttl: 10, now: 100_000)
        #expect(names(c, 1, "10.0.0.1", now: 100_000).contains(longest))
        learn(c, 1, "10.0.0.1", longest + "x", ttl: 10, now: 100_000)  // 254 bytes: ignored
        #expect(!names(c, 1, "10.0.0.1", now: 100_000).contains(longest + "x"))
    }

    @Test func lruEviction() {
        let c = AddressNameCache(capacity: 3)
        learn(c, 1, "10.0.0.1", "a.example", ttl: 100, now: 0)
        learn(c, 1, "10.0.0.2", "b.example", ttl: 100, now: 0)
        learn(c, 1, "10.0.0.3", "c.example", ttl: 100, now: 0)
        _ = names(c, 1, "10.0.0.1", now: 1)  // a is now the most recent
        learn(c, 1, "10.0.0.4", "d.example", ttl: 100, now: 2)  // evicts b
        #expect(names(c, 1, "10.0.0.2", now: 3) == [])
        #expect(names(c, 1, "10.0.0.1", now: 3) == ["a.example"])
        #expect(c.count == 3 && c.evictions == 1)
    }

    @Test func learnsFromDNSAnswers() {
        let p = DNSAnswers()
        let m = DNSAnswersTests.cdnAnswer()
        #expect(m.withUnsafeBytes { p.parse($0) } == .answered)
        let c = AddressNameCache(capacity: 8, ttlFloor: 0)
        c.learn(peer: 5, from: p, now: 0)
        #expect(names(c, 5, "192.0.2.7", now: 0) == ["www.example.com", "edge.cdn.net"])
        #expect(names(c, 5, "2001:db8::7", now: 29_999) == ["www.example.com", "edge.cdn.net"])
        #expect(names(c, 5, "2001:db8::7", now: 30_000) == [])
        #expect(names(c, 5, "6.6.6.6", now: 0) == [])  // the unrelated record taught nothing
    }

    @Test func randomAgainstSlowReference() {
        var rng = SplitMix(seed: 4096)
        let capacity = 24
        let c = AddressNameCache(capacity: capacity, bytesPerAddress: 300, ttlFloor: 5, ttlCeiling: 200, hashSeed: 99)
        var ref = SlowNameCache(capacity: capacity, bytesPerAddress: 300, floor: 5, ceiling: 200)
        var now: Int64 = 0
        let namePool = (0..<40).map { "n\($0)." + String(repeating: "x", count: $0 * 3) + ".example" }
        for step in 0..<60_000 {
            now += Int64(rng.next() % 700)
            let peer = UInt32(rng.next() % 3)
            let a = rng.next() % 2 == 0 ? "10.0.0.\(rng.next() % 40)" : "fd00::\(rng.next() % 40)"
            let key = SlowNameCache.Key(peer: peer, address: IPAddress(a)!)
            if rng.next() % 3 == 0 {
                let got = names(c, peer, a, now: now)
                let want = ref.lookup(key, now: now)
                #expect(got == want, "step \(step)")
                if got != want { return }
            } else {
                let name = namePool[Int(rng.next() % UInt64(namePool.count))]
                let ttl = UInt32(rng.next() % 300)
                learn(c, peer, a, name, ttl: ttl, now: now)
                ref.learn(key, name, ttl: ttl, now: now)
            }
            #expect(c.count == ref.entries.count)
        }
    }
}
