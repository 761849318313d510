import Core
import Testing

@testable import Packet

/// The slow reference: a list of (prefix, peer), longest match by linear scan (wireguard-go's
/// `allowedips_rand_test.go` SlowRouter).
struct SlowRouter {
    var entries: [(IPPrefix, Int32)] = []

    mutating func insert(_ p: IPPrefix, _ peer: Int32) {
        if let i = entries.firstIndex(where: { $0.0 == p }) { entries[i].1 = peer } else { entries.append((p, peer)) }
    }

    mutating func remove(_ p: IPPrefix) { entries.removeAll { $0.0 == p } }

    func lookup(_ a: IPAddress) -> Int32? {
        var best: (Int, Int32)? = nil
        for (p, peer) in entries where p.contains(a) && p.length >= (best?.0 ?? -1) { best = (p.length, peer) }
        return best?.1
    }
}

@Suite struct AllowedIPsTests {
    func p(_ s: String) -> IPPrefix { IPPrefix(s)! }
    func a(_ s: String) -> IPAddress { IPAddress(s)! }

    @Test func longestPrefixWins() {
        var t = AllowedIPs()
        t.insert(p("10.0.0.0/8"), peer: 1)
        t.insert(p("10.1.0.0/16"), peer: 2)
        t.insert(p("10.1.2.3/32"), peer: 3)
        t.insert(p("0.0.0.0/0"), peer: 4)
        t.insert(p("fd99::/64"), peer: 5)
        t.insert(p("fd99::2/128"), peer: 6)
        #expect(t.lookup(a("10.1.2.3")) == 3)
        #expect(t.lookup(a("10.1.2.4")) == 2)
        #expect(t.lookup(a("10.2.0.1")) == 1)
        #expect(t.lookup(a("192.0.2.1")) == 4)
        #expect(t.lookup(a("fd99::2")) == 6)
        #expect(t.lookup(a("fd99::3")) == 5)
        #expect(t.lookup(a("fd98::1")) == nil)
        #expect(t.count == 6)
    }

    @Test func familiesAreSeparate() {
        var t = AllowedIPs()
        t.insert(p("::/0"), peer: 1)
        #expect(t.lookup(a("10.0.0.1")) == nil)
        t.insert(p("0.0.0.0/0"), peer: 2)
        #expect(t.lookup(a("10.0.0.1")) == 2)
        #expect(t.lookup(a("::ffff:10.0.0.1")) == 1)
    }

    @Test func reinsertReplacesOwner() {
        var t = AllowedIPs()
        t.insert(p("10.0.0.0/24"), peer: 1)
        t.insert(p("10.0.0.0/24"), peer: 2)
        #expect(t.lookup(a("10.0.0.9")) == 2)
        #expect(t.count == 1)
        #expect(t.prefixes(of: 1).isEmpty)
        #expect(t.prefixes(of: 2) == [p("10.0.0.0/24")])
    }

    @Test func removeAndRemoveAll() {
        var t = AllowedIPs()
        t.insert(p("10.0.0.0/8"), peer: 1)
        t.insert(p("10.1.0.0/16"), peer: 2)
        t.insert(p("10.2.0.0/16"), peer: 2)
        t.insert(p("fd00::/8"), peer: 2)
        #expect(t.remove(p("10.1.0.0/16")) == 2)
        #expect(t.remove(p("10.1.0.0/16")) == nil)
        #expect(t.remove(p("10.3.0.0/16")) == nil)
        #expect(t.lookup(a("10.1.0.1")) == 1)
        #expect(Set(t.prefixes(of: 2)) == [p("10.2.0.0/16"), p("fd00::/8")])
        #expect(t.removeAll(peer: 2) == 2)
        #expect(t.lookup(a("10.2.0.1")) == 1)
        #expect(t.lookup(a("fd00::1")) == nil)
        #expect(t.count == 1)
        #expect(t.removeAll(peer: 1) == 1)
        #expect(t.count == 0)
        #expect(t.nodeCount == 0)
    }

    /// Random prefixes and lookups against the linear reference, with removals; nodes never exceed
    /// what a path-compressed trie needs (2n - 1 per family) and all are freed at the end.
    @Test(arguments: [false, true]) func randomAgainstSlowRouter(ipv6: Bool) {
        var rng = SplitMix(seed: ipv6 ? 0x6666 : 0x4444)
        var fast = AllowedIPs()
        var slow = SlowRouter()
        // Clustered addresses (few distinct high bits) make prefixes nest and share paths.
        func randomAddress() -> IPAddress {
            if ipv6 {
                return IPAddress(v6High: 0xfd00_0000_0000_0000 | (rng.next() & 0x0000_0F0F_0000_00FF), low: rng.next() & 0xFFFF)
            }
            return IPAddress(v4: UInt32(truncatingIfNeeded: 0x0A00_0000 | (rng.next() & 0x000F_0FFF)))
        }
        let width = ipv6 ? 128 : 32
        var inserted: [IPPrefix] = []
        for _ in 0..<2000 {
            let prefix = IPPrefix(randomAddress(), length: Int(rng.next() % UInt64(width + 1)))!
            let peer = Int32(rng.next() % 64)
            fast.insert(prefix, peer: peer)
            slow.insert(prefix, peer)
            inserted.append(prefix)
        }
        #expect(fast.count == slow.entries.count)
        var mismatches = 0
        for _ in 0..<3000 {
            let x = randomAddress()
            if fast.lookup(x) != slow.lookup(x) { mismatches += 1 }
        }
        #expect(mismatches == 0)
        // Remove half, then compare again.
        for prefix in inserted.shuffled(using: &rng).prefix(1000) {
            #expect(fast.remove(prefix) == slow.lookupExact(prefix))
            slow.remove(prefix)
        }
        #expect(fast.count == slow.entries.count)
        #expect(fast.nodeCount <= max(0, 2 * fast.count - 1))
        for _ in 0..<3000 {
            let x = randomAddress()
            if fast.lookup(x) != slow.lookup(x) { mismatches += 1 }
        }
        #expect(mismatches == 0)
        // Per-peer listing matches the reference; removing every peer empties the table.
        for peer in Int32(0)..<64 {
            #expect(Set(fast.prefixes(of: peer)) == Set(slow.entries.filter { $0.1 == peer }.map(\.0)))
            fast.removeAll(peer: peer)
        }
        #expect(fast.count == 0)
        #expect(fast.nodeCount == 0)
    }
}

extension SlowRouter {
    func lookupExact(_ p: IPPrefix) -> Int32? { entries.first { $0.0 == p }?.1 }
}
