import Core
import Engine
import Packet
import Synchronization
import Testing
import WireGuard

/// The one peer registry: the lists and the routing trie agree, listeners see each change once
/// and in order, and a runtime peer's name is stable and unique.
@Suite struct PeerRegistryTests {
    static func key(_ b: UInt8) -> PublicKey { PublicKey([UInt8](repeating: b, count: 32))! }
    static func peer(_ h: UInt32, _ name: String, _ prefixes: [String], tier: PeerTier = .free) -> GatewayPeer {
        GatewayPeer(handle: PeerHandle(rawValue: h), name: name, publicKey: key(UInt8(h)),
                    allowedIPs: prefixes.map { IPPrefix($0)! }, tier: tier)
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

    @Test func listenersSeeEveryChangeOnceWithOldAndNew() {
        let r = PeerRegistry()
        let seen = Mutex<[(UInt64, Int, Int)]>([])
        r.onChange { old, new in seen.withLock { $0.append((new.version, old.count, new.count)) } }
        r.put(Self.peer(1, "alice", ["10.0.0.2/32"]))
        r.put(Self.peer(2, "bob", ["10.0.0.3/32"]))
        #expect(r.update(PeerHandle(rawValue: 1)) { $0.tier = .premium })
        #expect(!r.update(PeerHandle(rawValue: 1)) { $0.tier = .premium }, "no change, no event")
        r.remove(PeerHandle(rawValue: 2))
        #expect(r.remove(PeerHandle(rawValue: 9)) == nil)
        let s = seen.withLock { $0 }
        #expect(s.map(\.0) == [1, 2, 3, 4])
        #expect(s.map(\.2) == [1, 2, 2, 1])
        #expect(r.version == 4 && r.current.named("alice")?.tier == .premium && r.current.named("alice")?.configTier == .free)
        #expect(r.current.routes.lookupRaw(IPAddress("10.0.0.3")!) <= 0, "bob's route left with him")
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
