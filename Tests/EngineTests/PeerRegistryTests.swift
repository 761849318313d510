import Core
import Engine
import Packet
import Synchronization
import Testing
import TestSupport
import WireGuard

/// The one peer registry: the lists and the routing trie agree, listeners see each change once
/// and in order, and a runtime peer's name is stable and unique.
@Suite struct PeerRegistryTests {
    static func key(_ b: UInt8) -> PublicKey { PublicKey([UInt8](repeating: b, count: 32))! }
    static func peer(_ h: UInt32, _ name: String, _ prefixes: [String], tier: PeerTier = .free) -> GatewayPeer {
        GatewayPeer(handle: PeerHandle(rawValue: h), name: name, publicKey: key(UInt8(h)),
                    allowedIPs: prefixes.map { IPPrefix($0)! }, tier: tier)
    }

    /// A peer's limit settings and resolved limits sit behind one shared reference (issue 15's
    /// memory bar: 10,000 peers in ≤ 64 MB); inlined, a GatewayPeer was 384 bytes. Peers with the
    /// same limits resolve to the same values, and a per-peer override stays that peer's own.
    @Test func limitsAreSharedNotInlined() throws {
        #expect(MemoryLayout<GatewayPeer>.size <= 128)
        var trial = LimitSettings()
        try trial.set("Quota", "1GiB")
        let tiers = TierClasses(classes: [PeerTier(rawValue: "trial")!: trial])
        var own = Self.peer(3, "carol", ["10.0.0.3/32"], tier: PeerTier(rawValue: "trial")!)
        try own.limitSettings.set("Rate", "5Mbit")
        let r = PeerRegistry([Self.peer(1, "alice", ["10.0.0.1/32"], tier: PeerTier(rawValue: "trial")!),
                              Self.peer(2, "bob", ["10.0.0.2/32"], tier: PeerTier(rawValue: "trial")!), own], tiers: tiers)
        let d = r.current
        let (a, b, c) = (d.named("alice")!, d.named("bob")!, d.named("carol")!)
        #expect(a.limits.quotaBytes == 1 << 30 && b.limits == a.limits)
        #expect(c.limits.quotaBytes == 1 << 30 && c.limits.rateUpBitsPerSecond == 5_000_000)
        #expect(a.limitSettings.isEmpty && !c.limitSettings.isEmpty)
        // A change to one peer's settings leaves the others' alone.
        r.setTierClasses(TierClasses())
        #expect(r.current.named("alice")!.limits.quotaBytes == nil)
        #expect(r.current.named("carol")!.limits.rateUpBitsPerSecond == 5_000_000)
    }

    @Test func aPrefixTakenOverLeavesTheOldOwnersListAndRoute() {
        let r = PeerRegistry([Self.peer(1, "alice", ["10.0.0.0/24", "fd00::/64"])])
        r.put(Self.peer(2, "bob", ["10.0.0.0/24"]))
        let d = r.current
        #expect(d.named("alice")?.allowedIPs == [IPPrefix("fd00::/64")!])
        #expect(d.named("bob")?.allowedIPs == [IPPrefix("10.0.0.0/24")!])
        #expect(d.routes.lookupRaw(IPAddress("10.0.0.7")!) == 2)
        #expect(d.routes.lookupRaw(IPAddress("fd00::7")!) == 1)
        // Extending alice's list with bob's prefix moves it back (list and trie).
        r.setAllowedIPs(PeerHandle(rawValue: 1), [IPPrefix("10.0.0.0/24")!], replace: false)
        #expect(r.current.named("bob")?.allowedIPs == [])
        #expect(r.current.routes.lookupRaw(IPAddress("10.0.0.7")!) == 1)
    }

    /// `put([…])` in one change ends where `put` one by one ends (lists, owners, routes), on
    /// random batches over a small prefix space so that takeovers and replacements are common.
    @Test(arguments: 0..<20)
    func batchPutAgreesWithOneByOne(seed: Int) {
        var rng = SplitMix(UInt64(seed) &+ 1)
        let space = (0..<12).map { "10.0.\($0).0/24" } + ["fd00::/64", "fd00:1::/64"]
        func randomPeer() -> GatewayPeer {
            let h = UInt32(rng.next() % 8) + 1
            let n = Int(rng.next() % 3)
            return Self.peer(h, "p\(h)", (0..<n).map { _ in space[Int(rng.next() % UInt64(space.count))] }.uniqued())
        }
        let start = (0..<4).map { _ in randomPeer() }
        let batch = (0..<10).map { _ in randomPeer() }
        let one = PeerRegistry(), many = PeerRegistry()
        for p in start { one.put(p); many.put(p) }
        for p in batch { one.put(p) }
        let before = many.version
        many.put(batch)
        #expect(many.version == before + 1, "one change")
        #expect(one.current.all == many.current.all)
        for prefix in space {
            let a = IPPrefix(prefix)!.address
            #expect(one.current.routes.lookupRaw(a) == many.current.routes.lookupRaw(a), "route for \(prefix)")
        }
    }

    @Test func listenersSeeEveryChangeOnceWithOldAndNew() {
        let r = PeerRegistry()
        let seen = Mutex<[(UInt64, Int, Int)]>([])
        r.onChange { old, new in seen.withLock { $0.append((new.version, old.count, new.count)) } }
        r.put(Self.peer(1, "alice", ["10.0.0.2/32"]))
        r.put(Self.peer(2, "bob", ["10.0.0.3/32"]))
        #expect(r.update(PeerHandle(rawValue: 1)) { $0.configTier = .premium })
        #expect(!r.update(PeerHandle(rawValue: 1)) { $0.configTier = .premium }, "no change, no event")
        r.remove(PeerHandle(rawValue: 2))
        #expect(r.remove(PeerHandle(rawValue: 9)) == nil)
        let s = seen.withLock { $0 }
        #expect(s.map(\.0) == [1, 2, 3, 4])
        #expect(s.map(\.2) == [1, 2, 2, 1])
        #expect(r.version == 4 && r.current.named("alice")?.tier == .premium && r.current.named("alice")?.tierOrigin == .config)
        #expect(r.current.routes.lookupRaw(IPAddress("10.0.0.3")!) <= 0, "bob's route left with him")
    }

    /// The registry is the one owner of a peer's tier: the configured one, the override in force
    /// with where it came from, and the limits of the tier in force. An override is kept by name
    /// for a peer that comes later, lapses while its tier is not configured (and applies again
    /// when it is), and its end brings the configured tier back — each one change, seen by
    /// listeners with the old and new tier.
    @Test func theTierInForceIsTheRegistrys() throws {
        let trial = PeerTier(rawValue: "trial")!
        var quota = LimitSettings()
        try quota.set("Quota", "1GiB")
        let withTrial = TierClasses(classes: [trial: quota])
        let r = PeerRegistry([Self.peer(1, "alice", ["10.0.0.1/32"])], tiers: withTrial)
        let seen = Mutex<[(PeerTier?, PeerTier?)]>([])
        r.onChange { old, new in seen.withLock { $0.append((old.named("alice")?.tier, new.named("alice")?.tier)) } }
        #expect(r.setOverride("alice", PeerTierOverride(tier: trial, origin: .admin, since: 1_000)))
        var a = r.current.named("alice")!
        #expect(a.tier == trial && a.configTier == .free && a.tierOrigin == .admin && a.tierOverride?.since == 1_000)
        #expect(a.limits.quotaBytes == 1 << 30, "limits follow the tier in force")
        // Kept by name for a peer that is not there yet.
        r.setOverride("dave", PeerTierOverride(tier: .premium, origin: .shared, since: 2_000))
        r.put(Self.peer(4, "dave", ["10.0.0.4/32"]))
        #expect(r.current.named("dave")?.tier == .premium && r.current.named("dave")?.tierOrigin == .shared)
        // A reload without [Tier trial]: the override lapses to the configured tier.
        r.setTierClasses(TierClasses())
        a = r.current.named("alice")!
        #expect(a.tier == .free && a.tierOrigin == .config && a.lapsedTierOverride?.tier == trial && a.limits.quotaBytes == nil)
        r.setTierClasses(withTrial)
        #expect(r.current.named("alice")?.tier == trial)
        // The override ends: the configured tier again.
        #expect(r.setOverride("alice", nil))
        a = r.current.named("alice")!
        #expect(a.tier == .free && a.tierOverride == nil && a.lapsedTierOverride == nil)
        let t = seen.withLock { $0 }.filter { $0.0 != $0.1 }
        #expect(t.map(\.1) == [trial, .free, trial, .free])
        #expect(MemoryLayout<GatewayPeer>.size <= 128)
    }

    @Test func runtimeNamesAreStableAndUnique() {
        let r = PeerRegistry()
        var bytes = [UInt8](repeating: 0, count: 32)
        let a = PublicKey(bytes)!
        bytes[31] = 1  // same first 8 base64 characters as `a`
        let b = PublicKey(bytes)!
        let na = r.runtimeName(for: a)
        #expect(na == "peer-" + String(a.base64.prefix(8)))
        r.put(GatewayPeer(handle: PeerHandle(rawValue: 1), name: na, publicKey: a, tier: .free, origin: .runtime))
        #expect(r.runtimeName(for: a) == na, "its own name again")
        let nb = r.runtimeName(for: b)
        #expect(nb != na && nb.hasPrefix(na))
    }
}

extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
