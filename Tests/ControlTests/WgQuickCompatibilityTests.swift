import Config
import Core
import Foundation
import Testing

/// wg-quick server files parse as tunneld configs (issue 15): pivpn-style (`### begin NAME ###`),
/// wg-easy-style (`# Client: NAME (id)`, empty hooks, iptables PostUp), and hand-written with
/// `SaveConfig`, `Table`, `DNS`, repeated `PostUp` and a peer with no name at all.
@Suite struct WgQuickCompatibilityTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/wgquick")
    static func load(_ name: String) throws -> TunnelConfig {
        try TunnelConfig.parse(String(decoding: try Data(contentsOf: dir.appendingPathComponent(name)), as: UTF8.self), file: name)
    }

    @Test func pivpn() throws {
        let c = try Self.load("pivpn.conf")
        #expect(c.peers.map(\.name) == ["phone", "laptop"])
        #expect(c.peers.allSatisfy { $0.nameOrigin == .comment && $0.presharedKey != nil && $0.allowedIPs.count == 2 })
        #expect(c.warnings.isEmpty)
        #expect(c.notes.map(\.description) == [
            "pivpn.conf:6: Name: peer named 'phone' after this comment; add Name = phone to keep it when the comment goes",
            "pivpn.conf:12: Name: peer named 'laptop' after this comment; add Name = laptop to keep it when the comment goes",
        ])
    }

    @Test func wgEasy() throws {
        let c = try Self.load("wg-easy.conf")
        #expect(c.peers.map(\.name) == ["Alice-Phone", "bob"])
        #expect(c.interface.preUp.isEmpty && c.interface.preDown.isEmpty)
        #expect(c.interface.postUp.count == 1 && c.interface.postUp[0].hasPrefix("iptables -t nat -A POSTROUTING -s 10.8.0.0/24"))
        #expect(c.interface.postDown.count == 1)
        #expect(c.notes.contains { $0.description.hasPrefix("wg-easy.conf:15: Name: peer named 'Alice-Phone' after this comment ('Alice Phone')") })
    }

    @Test func handWritten() throws {
        let c = try Self.load("hand.conf")
        let nas = "peer-" + "NTU1NTU1"
        #expect(c.peers.map(\.name) == ["carol", nas])
        #expect(c.peers.map(\.nameOrigin) == [.comment, .publicKey])
        #expect(c.interface.saveConfig == false && c.interface.table == "off")
        #expect(c.interface.dns == ["192.168.77.1", "office.lan"])
        #expect(c.interface.postUp == ["iptables -A FORWARD -i %i -j ACCEPT", "iptables -t nat -A POSTROUTING -o eth0 -j MASQUERADE"])
        #expect(c.interface.postDown.count == 2)
        #expect(c.interface.listenPort == 51821)
        #expect(c.interface.clientDNS.isEmpty, "wg-quick's DNS is the server's own resolver, not the clients'")
        #expect(c.warnings.map(\.description) == ["hand.conf:8: DNS: wg-quick sets this machine's own resolver with it; tunneld does not use it, and client configs do not get it; "
            + "to give clients a resolver, write ClientDNS = 192.168.77.1, office.lan (tunnelctl peer add|config|qr put it in their DNS line)"])
        #expect(c.notes.map(\.line) == [4, 5, 9, 10, 11, 12, 14, 19])
    }

    @Test func nameKeyWinsOverComment() throws {
        let k1 = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let k2 = WireGuardKey(bytes: [UInt8](repeating: 2, count: 32))!.base64
        let c = try TunnelConfig.parse("[Interface]\nPrivateKey = \(k1)\nAddress = 10.0.0.1/24\n### Client old\n[Peer]\nName = new\nPublicKey = \(k2)\nAllowedIPs = 10.0.0.2/32\n", file: "t")
        #expect(c.peers.map(\.name) == ["new"] && c.peers[0].nameOrigin == .nameKey)
    }

    @Test func commentNameDoesNotCrossAKeyLine() throws {
        // A name comment followed by a key (not a header) names nothing.
        let k1 = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let k2 = WireGuardKey(bytes: [UInt8](repeating: 2, count: 32))!.base64
        let c = try TunnelConfig.parse("[Interface]\n### Client ghost\nPrivateKey = \(k1)\nAddress = 10.0.0.1/24\n[Peer]\nPublicKey = \(k2)\nAllowedIPs = 10.0.0.2/32\n", file: "t")
        #expect(c.peers[0].name == PeerName.fromKey(k2))
    }

    @Test(arguments: [
        ("### Client alice", "alice"), ("### begin alice ###", "alice"), ("# Client: Alice Phone (4b1c)", "Alice Phone"),
        ("# Name = bob", "bob"), ("#Name=bob", "bob"), ("  # name =  x y ", "x y"),
        ("### end alice ###", nil), ("# just a comment", nil), ("Name = bob", nil), ("# Client:", nil),
    ] as [(String, String?)])
    func nameComments(line: String, name: String?) {
        #expect(PeerNameComment.name(in: line) == name)
    }

    @Test func expiresAndDisabled() throws {
        let k1 = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let k2 = WireGuardKey(bytes: [UInt8](repeating: 2, count: 32))!.base64
        let c = try TunnelConfig.parse("[Interface]\nPrivateKey = \(k1)\nAddress = 10.0.0.1/24\nPublicEndpoint = vpn.example.org:51820\nDefaultTier = premium\n[Peer]\nName = a\nPublicKey = \(k2)\nAllowedIPs = 10.0.0.2/32\nExpires = 2027-01-31\nDisabled = true\n", file: "t")
        #expect(c.peers[0].expiresMs == TimeText.parseISO("2027-01-31T00:00:00.000Z"))
        #expect(c.peers[0].disabled)
        #expect(c.interface.publicEndpoint == HostPort(host: "vpn.example.org", port: 51820))
        #expect(c.interface.defaultTier == .premium)
        let t = try TunnelConfig.parse("[Interface]\nPrivateKey = \(k1)\nAddress = 10.0.0.1/24\n[Peer]\nName = a\nPublicKey = \(k2)\nAllowedIPs = 10.0.0.2/32\nExpires = 2027-01-31T12:30+02:00\n", file: "t")
        #expect(t.peers[0].expiresMs == TimeText.parseISO("2027-01-31T10:30:00.000Z"))
    }
}
