import Core
import Foundation
import Packet
import Testing
@testable import Config
@testable import ControlProtocol

/// `ConfigRewriter.applyUAPI` (issue 15, item 5): what `wg set`/`wg setconf` does to tunneld.conf.
@Suite struct UAPIWriteBackTests {
    static let text = """
        [Interface]
        PrivateKey = \(key(1).base64)
        Address = 10.99.0.1/24
        DefaultTier = premium

        # the first user
        [Peer]
        Name = alice
        PublicKey = \(key(2).base64)
        AllowedIPs = 10.99.0.2/32
        AllowedIPs = 10.50.0.0/16

        [Peer]
        Name = bob
        PublicKey = \(key(3).base64)
        AllowedIPs = 10.99.0.3/32   # bob's laptop
        PersistentKeepalive = 25

        """
    static let now: Int64 = 1_800_000_000_000

    static func apply(_ request: UAPISetRequest, _ text: String = text) throws -> (UAPIWriteBack, TunnelConfig) {
        let wb = try ConfigRewriter.applyUAPI(request, to: text, config: try TunnelConfig.parse(text, file: "t"), nowMs: now)
        return (wb, try TunnelConfig.parse(wb.text, file: "after"))
    }

    static func update(_ k: WireGuardKey, _ body: (inout UAPIPeerUpdate) -> Void = { _ in }) -> UAPIPeerUpdate {
        var u = UAPIPeerUpdate(publicKey: k)
        body(&u)
        return u
    }

    @Test func aNewPeerIsAppendedNamedByItsKeyWithTheDefaultTier() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(9)) {
            $0.allowedIPs = [IPPrefix("10.99.0.9/32")!, IPPrefix("192.168.40.0/24")!]
            $0.endpoint = HostPort("192.0.2.7:51820")
            $0.persistentKeepaliveInterval = 15
        }]
        let (wb, after) = try Self.apply(r)
        let name = PeerName.fromKey(key(9).base64)
        #expect(wb.added == [name])
        #expect(wb.removed.isEmpty && wb.changed.isEmpty)
        #expect(wb.text.hasPrefix(Self.text), "the old text is kept byte for byte")
        let p = try #require(after.peer(named: name))
        #expect(p.publicKey == key(9))
        #expect(p.tier == .premium)
        #expect(p.allowedIPs == [IPPrefix("10.99.0.9/32")!, IPPrefix("192.168.40.0/24")!])
        #expect(p.endpoint == HostPort("192.0.2.7:51820"))
        #expect(p.persistentKeepalive == 15)
        #expect(p.nameOrigin == .nameKey, "written with a Name line")
        #expect(wb.text.contains("# added over the UAPI (wg set), \(TimeText.iso(Self.now))\n[Peer]\nName = \(name)\n"))
    }

    @Test func tierIsFreeWithoutDefaultTier() throws {
        let text = Self.text.replacingOccurrences(of: "DefaultTier = premium\n", with: "")
        var r = UAPISetRequest()
        r.peers = [Self.update(key(9)) { $0.allowedIPs = [IPPrefix("10.99.0.9/32")!] }]
        let (_, after) = try Self.apply(r, text)
        #expect(after.peer(named: PeerName.fromKey(key(9).base64))?.tier == .free)
    }

    @Test func removeTakesTheSectionOut() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(2)) { $0.remove = true }]
        let (wb, after) = try Self.apply(r)
        #expect(wb.removed == ["alice"])
        #expect(after.peers.map(\.name) == ["bob"])
        #expect(!wb.text.contains("the first user"), "its comment goes with it")
    }

    @Test func removingAnUnknownPeerOrUpdateOnlyChangesNothing() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(20)) { $0.remove = true },
                   Self.update(key(21)) { $0.updateOnly = true; $0.allowedIPs = [IPPrefix("10.99.0.21/32")!] }]
        let (wb, _) = try Self.apply(r)
        #expect(!wb.changesFile)
        #expect(wb.text == Self.text)
    }

    @Test func endpointOnlyOfAnExistingPeerIsNotWritten() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(3)) { $0.endpoint = HostPort("192.0.2.9:4000") }]
        let (wb, _) = try Self.apply(r)
        #expect(!wb.changesFile, "endpoints roam: runtime state")
    }

    @Test func allowedIPsOfAnExistingPeerAreRewrittenAndTakenFromOthers() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(3)) { $0.allowedIPs = [IPPrefix("10.50.0.0/16")!] }]
        let (wb, after) = try Self.apply(r)
        #expect(Set(wb.changed) == ["alice", "bob"])
        #expect(after.peer(named: "bob")?.allowedIPs == [IPPrefix("10.99.0.3/32")!, IPPrefix("10.50.0.0/16")!])
        #expect(after.peer(named: "alice")?.allowedIPs == [IPPrefix("10.99.0.2/32")!], "a prefix has one owner, as in WireGuard")
        #expect(!wb.text.contains("AllowedIPs = 10.50.0.0/16\n\n"), "alice's second AllowedIPs line went")
    }

    @Test func replaceAllowedIPsAndKeepaliveOff() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(3)) {
            $0.replaceAllowedIPs = true
            $0.allowedIPs = [IPPrefix("10.99.0.33/32")!]
            $0.persistentKeepaliveInterval = 0
            $0.presharedKey = key(40)
        }]
        let (wb, after) = try Self.apply(r)
        #expect(wb.changed == ["bob"])
        let bob = try #require(after.peer(named: "bob"))
        #expect(bob.allowedIPs == [IPPrefix("10.99.0.33/32")!])
        #expect(bob.persistentKeepalive == nil)
        #expect(bob.presharedKey == key(40))
        #expect(wb.text.contains("AllowedIPs = 10.99.0.33/32   # bob's laptop"), "spacing and comment kept")
    }

    @Test func replacePeersKeepsTheNamedSectionsAndDropsTheRest() throws {
        var r = UAPISetRequest()
        r.replacePeers = true
        r.peers = [Self.update(key(3)) { $0.allowedIPs = [IPPrefix("10.99.0.3/32")!] },
                   Self.update(key(9)) { $0.allowedIPs = [IPPrefix("10.99.0.9/32")!] }]
        let (wb, after) = try Self.apply(r)
        #expect(wb.removed == ["alice"])
        #expect(wb.changed.isEmpty, "bob's record is what the request lists")
        #expect(after.peers.map(\.name) == ["bob", PeerName.fromKey(key(9).base64)])
    }

    /// `wg setconf tv0 <(wg showconf tv0)`: the same peers again change nothing in the file.
    @Test func setconfOfTheSamePeersChangesNothing() throws {
        var r = UAPISetRequest()
        r.replacePeers = true
        r.peers = [Self.update(key(2)) { $0.allowedIPs = [IPPrefix("10.99.0.2/32")!, IPPrefix("10.50.0.0/16")!] },
                   Self.update(key(3)) { $0.allowedIPs = [IPPrefix("10.99.0.3/32")!]; $0.persistentKeepaliveInterval = 25 }]
        let (wb, _) = try Self.apply(r)
        #expect(!wb.changesFile)
        #expect(wb.text == Self.text)
    }

    /// A new peer with 20,000 allowed_ip lines (UAPILargeSetTests sends 100,000 to the server)
    /// is written back as one line, in order, without a quadratic scan.
    @Test func manyAllowedIPsStayLinear() throws {
        var r = UAPISetRequest()
        let prefixes = (0..<20_000).map { IPPrefix("10.\(100 + $0 / 65536).\($0 / 256 % 256).\($0 % 256)/32")! }
        r.peers = [Self.update(key(9)) { $0.allowedIPs = prefixes }]
        let (wb, after) = try Self.apply(r)
        #expect(wb.added.count == 1)
        #expect(after.peer(named: wb.added[0])?.allowedIPs == prefixes)
    }

    /// A prefix that moves to a peer and back ends with its last taker, as in WireGuard.
    @Test func aPrefixMovedTwiceEndsWithItsLastTaker() throws {
        var r = UAPISetRequest()
        let p = IPPrefix("10.50.0.0/16")!
        r.peers = [Self.update(key(3)) { $0.allowedIPs = [p] }, Self.update(key(2)) { $0.allowedIPs = [p] }]
        let (wb, after) = try Self.apply(r)
        #expect(!wb.changesFile, "alice had it and has it again")
        #expect(after.peer(named: "alice")?.allowedIPs.contains(p) == true)
        #expect(after.peer(named: "bob")?.allowedIPs == [IPPrefix("10.99.0.3/32")!])
    }

    @Test func aNameTakenInTheFileGetsALongerPrefix() throws {
        let taken = PeerName.fromKey(key(9).base64)
        let text = Self.text.replacingOccurrences(of: "Name = bob", with: "Name = \(taken)")
        var r = UAPISetRequest()
        r.peers = [Self.update(key(9)) { $0.allowedIPs = [IPPrefix("10.99.0.9/32")!] }]
        let (wb, _) = try Self.apply(r, text)
        #expect(wb.added == [PeerName.fromKey(key(9).base64, length: 12)])
    }

    @Test func aKeyWithPlusSignsGetsAValidName() throws {
        let plus = WireGuardKey(bytes: (0..<32).map { [0xfb, 0xef, 0xbe][$0 % 3] })!
        #expect(plus.base64.hasPrefix("++++"))
        var r = UAPISetRequest()
        r.peers = [Self.update(plus) { $0.allowedIPs = [IPPrefix("10.99.0.9/32")!] }]
        let (wb, after) = try Self.apply(r)
        #expect(wb.added == ["peer-" + String(repeating: "-", count: 8)])
        #expect(after.peer(named: "peer-" + String(repeating: "-", count: 8))?.publicKey == plus, "the file parses: the name is valid")
    }

    @Test func aHostNameEndpointIsRefused() throws {
        var r = UAPISetRequest()
        r.peers = [Self.update(key(9)) { $0.endpoint = HostPort("vpn.example.org:51820") }]
        #expect(throws: ValueError.self) { try Self.apply(r) }
    }

    @Test func hooksReplaceEveryPercentI() throws {
        let text = Self.text.replacingOccurrences(of: "DefaultTier = premium\n",
                                                  with: "PreUp = echo %i\nPostUp = iptables -A FORWARD -i %i -j ACCEPT; echo %i %i\nPostDown = true\n")
        let c = try TunnelConfig.parse(text, file: "t")
        #expect(c.interface.commands(of: .preUp, interface: "tv7") == ["echo tv7"])
        #expect(c.interface.commands(of: .postUp, interface: "tv7") == ["iptables -A FORWARD -i tv7 -j ACCEPT; echo tv7 tv7"])
        #expect(c.interface.commands(of: .preDown, interface: "tv7") == [])
        #expect(c.interface.commands(of: .postDown, interface: "tv7") == ["true"])
        #expect(InterfaceHook.preUp.isFatal && InterfaceHook.postUp.isFatal && !InterfaceHook.preDown.isFatal)
    }
}
