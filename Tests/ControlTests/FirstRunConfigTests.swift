import Config
import Core
import Foundation
import Testing

/// `tunnelctl init`'s pure part: the host's tables read (`HostNetwork`), the subnet chosen, the
/// configuration rendered (golden files in Golden/firstrun/; `TUNNELVISION_UPDATE_GOLDEN=1`
/// rewrites them), and the `ClientDNS` key it writes.
@Suite struct FirstRunConfigTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/firstrun")

    func expectGolden(_ text: String, _ name: String) throws {
        let url = Self.dir.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["TUNNELVISION_UPDATE_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: Self.dir, withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        let want = try String(contentsOf: url, encoding: .utf8)
        #expect(text == want, "golden \(name) differs:\n\(text)")
    }

    // A little-endian host's tables (the tests run on amd64/arm64).
    static let route = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
        eth0\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
        wg1\t0000630A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
        garbage line
        """
    static let route6 = """
        fd990000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0
        """
    static let udp = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
         100: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        0 12345 2 0000000000000000 0
         101: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12346 2 0000000000000000 0
         102: 00000000:14E9 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12347 2 0000000000000000 0
        """
    static let tcp6 = """
          sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 00000000000000000000000001000000:0035 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
           1: 0000000000000000FFFF00000100A8C0:0035 0000000000000000FFFF00000200A8C0:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1
        """

    @Test func readsTheKernelTables() {
        let r = HostNetwork.ipv4Routes(Self.route)
        #expect(r.map(\.destination.description) == ["0.0.0.0/0", "192.168.1.0/24", "10.99.0.0/16"])
        #expect(r.map(\.interface) == ["eth0", "eth0", "wg1"])
        let r6 = HostNetwork.ipv6Routes(Self.route6)
        #expect(r6.map(\.destination.description) == ["fd99::/64", "::/0"] && r6.map(\.interface) == ["eth1", "eth0"])
        #expect(HostNetwork.listeners(Self.udp, tcp: false, port: 53).map(\.description) == ["127.0.0.53", "0.0.0.0"])
        #expect(HostNetwork.listeners(Self.tcp6, tcp: true, port: 53).map(\.description) == ["::1"], "only LISTEN sockets")
        let host = HostNetwork(routes: r + r6, addresses: [
            .init(interface: "eth0", address: InterfaceAddress("192.168.1.20/24")!),
            .init(interface: "eth0", address: InterfaceAddress("fe80::1/64")!),
            .init(interface: "eth0", address: InterfaceAddress("2001:db8::20/64")!),
            .init(interface: "lo", address: InterfaceAddress("127.0.0.1/8")!),
        ], dnsListeners: HostNetwork.listeners(Self.udp, tcp: false, port: 53))
        #expect(host.wanInterface == "eth0")
        #expect(host.publicAddress(of: "eth0")?.description == "192.168.1.20")
        #expect(host.resolverOnEveryAddress)
        #expect(!HostNetwork(dnsListeners: [IPAddress("127.0.0.53")!, IPAddress("192.168.1.1")!]).resolverOnEveryAddress)
        #expect(!host.prefixesInUse.contains { $0.length == 0 }, "default routes are no collision")
        // Every truncation of the tables reads without a crash.
        for text in [Self.route, Self.route6, Self.udp, Self.tcp6] {
            for n in 0...text.utf8.count {
                let t = String(decoding: Array(text.utf8.prefix(n)), as: UTF8.self)
                _ = HostNetwork.ipv4Routes(t); _ = HostNetwork.ipv6Routes(t)
                _ = HostNetwork.listeners(t, tcp: true, port: 53); _ = HostNetwork.listeners(t, tcp: false, port: 53)
            }
        }
    }

    @Test func choosesAFreeSubnet() {
        let preferred = FirstRunConfig.defaultSubnet
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [], searching: true) == preferred)
        let lan = IPPrefix("192.168.1.0/24")!
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [lan, IPPrefix("fd99::/64")!], searching: true) == preferred)
        // An address in 10.99.0.0/24: the next /24.
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [IPPrefix("10.99.0.5/24")!], searching: true)?.description == "10.99.1.0/24")
        // A route over all of 10.99.0.0/16: the first /24 after it.
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [IPPrefix("10.99.0.0/16")!], searching: true)?.description == "10.100.0.0/24")
        // A host route inside it counts too.
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [IPPrefix("10.99.0.77/32")!], searching: true)?.description == "10.99.1.0/24")
        // Asked for by name: that one or nothing.
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [IPPrefix("10.0.0.0/8")!], searching: false) == nil)
        #expect(FirstRunConfig.freeSubnet(preferred: preferred, inUse: [IPPrefix("10.0.0.0/8")!], searching: true) == nil, "all of 10/8 taken")
        // Wraps around 10.255.255.0/24 to 10.0.0.0/24.
        #expect(FirstRunConfig.freeSubnet(preferred: IPPrefix("10.255.255.0/24")!, inUse: [IPPrefix("10.255.255.0/24")!], searching: true)?.description == "10.0.0.0/24")
        let ula = FirstRunConfig.uniqueLocalSubnet(globalID: 0x12_3456_789A)
        #expect(ula.description == "fd12:3456:789a::/64")
        #expect(FirstRunConfig.uniqueLocalSubnet(globalID: ~0).description == "fdff:ffff:ffff::/64")
    }

    func sample() -> FirstRunConfig {
        var c = FirstRunConfig(subnet: IPPrefix("10.99.0.0/24")!, subnet6: FirstRunConfig.uniqueLocalSubnet(globalID: 0x12_3456_789A),
                               privateKeyFile: "/etc/tunnelvision/private.key", policyDirectory: "/etc/tunnelvision/policies")
        c.endpoint = HostPort("203.0.113.5:51820")
        c.endpointGuessed = true
        c.wan = "eth0"
        c.clientDNS = ["10.99.0.1"]
        c.dnsWhy = "A resolver listened on port 53 of every address when init ran, so it answers on 10.99.0.1 too."
        return c
    }

    @Test func rendersTheGoldenConfigThatParses() throws {
        let c = sample()
        #expect(c.gatewayAddress.description == "10.99.0.1" && c.gatewayAddress6?.description == "fd12:3456:789a::1")
        let text = c.render(header: "/etc/tunnelvision/tunneld.conf: written by tunnelctl init (TunnelVision 0.1.0), 2026-12-06")
        try expectGolden(text, "tunneld.conf")
        let parsed = try TunnelConfig.parse(text, file: "tunneld.conf", baseDirectory: "/etc/tunnelvision")
        #expect(parsed.warnings.isEmpty && parsed.peers.isEmpty)
        let i = parsed.interface
        #expect(i.addresses.map(\.description) == ["10.99.0.1/24", "fd12:3456:789a::1/64"])
        #expect(i.publicEndpoint?.description == "203.0.113.5:51820")
        #expect(i.statusListen?.description == "10.99.0.1:80")
        #expect(i.metricsListen?.description == "127.0.0.1:9586")
        #expect(i.clientDNS == ["10.99.0.1"])
        #expect(i.privateKeySource == .file("/etc/tunnelvision/private.key"))
        #expect(i.policyDirectory == "/etc/tunnelvision/policies")
        #expect(i.gatewayAddresses.map(\.description) == ["10.99.0.1", "fd12:3456:789a::1"])
    }

    @Test func rendersWithoutEndpointDNSOrIPv6() throws {
        var c = sample()
        c.subnet6 = nil
        c.endpoint = nil
        c.endpointGuessed = false
        c.wan = nil
        c.clientDNS = []
        c.dnsWhy = "No resolver listened on port 53 when init ran: make one answer on 10.99.0.1 (dnsmasq, unbound: docs/operations.md)\nand uncomment this, or name a resolver peers may reach."
        let text = c.render(header: "/tmp/x/tunneld.conf: written by tunnelctl init (TunnelVision 0.1.0), 2026-12-06")
        try expectGolden(text, "tunneld-bare.conf")
        let parsed = try TunnelConfig.parse(text, file: "tunneld.conf")
        #expect(parsed.interface.publicEndpoint == nil && parsed.interface.clientDNS.isEmpty)
        #expect(parsed.interface.addresses.map(\.description) == ["10.99.0.1/24"])
        #expect(text.contains("# ClientDNS = 10.99.0.1\n") && text.contains("# PublicEndpoint = vpn.example.org:51820\n"))
    }

    @Test func clientDNSKeyInInterfaceAndPeer() throws {
        let key = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let peerKey = WireGuardKey(bytes: [UInt8](repeating: 2, count: 32))!.base64
        let c = try TunnelConfig.parse("""
            [Interface]
            PrivateKey = \(key)
            Address = 10.99.0.1/24
            ClientDNS = 10.99.0.1, lan
            [Peer]
            Name = a
            PublicKey = \(peerKey)
            AllowedIPs = 10.99.0.2/32
            ClientDNS = 9.9.9.9
            """, file: "t")
        #expect(c.interface.clientDNS == ["10.99.0.1", "lan"])
        #expect(c.clientDNS(of: c.peers[0]) == ["9.9.9.9"])
        var other = c.peers[0]
        other.clientDNS = []
        #expect(c.clientDNS(of: other) == ["10.99.0.1", "lan"])
        #expect(c.warnings.isEmpty)
        let bad = #expect(throws: ConfigErrors.self) {
            try TunnelConfig.parse("[Interface]\nPrivateKey = \(key)\nAddress = 10.99.0.1/24\nClientDNS = 10.99.0.1:53\n", file: "t")
        }
        #expect(bad?.errors.first?.description == "t:4: ClientDNS: '10.99.0.1:53' is neither a resolver address nor a search domain; "
            + "write addresses (and search domains) as wg-quick's DNS takes them, e.g. 10.99.0.1 or 10.99.0.1, lan")
    }

    /// The flows the policy is asked about: status page, DNS (UDP and TCP) and ping, for every
    /// enabled peer and a new peer of each tier.
    @Test func gatewayProbesFollowTheConfiguration() throws {
        let key = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let peerKey = WireGuardKey(bytes: [UInt8](repeating: 2, count: 32))!.base64
        let none = try TunnelConfig.parse("[Interface]\nPrivateKey = \(key)\nAddress = 10.99.0.1/24, fd99::1/64\n", file: "t")
        // No StatusListen, no ClientDNS: pings only, v4 and v6, from a new free and premium peer.
        #expect(none.gatewayProbes.map(\.service) == Array(repeating: ["ping to the gateway (10.99.0.1)", "ping to the gateway (fd99::1)"], count: 2).flatMap { $0 })
        #expect(Set(none.gatewayProbes.map(\.tier)) == [.free, .premium])
        #expect(none.gatewayProbes.allSatisfy { $0.peer == nil && ($0.source.description == "10.99.0.2" || $0.source.description == "fd99::2") })
        let full = try TunnelConfig.parse("""
            [Interface]
            PrivateKey = \(key)
            Address = 10.99.0.1/24
            StatusListen = 10.99.0.1:80
            ClientDNS = 10.99.0.1, lan
            [Peer]
            Name = a
            PublicKey = \(peerKey)
            AllowedIPs = 10.99.0.7/32
            ClientDNS = 192.168.1.1
            Tier = premium
            """, file: "t")
        let a = full.gatewayProbes.filter { $0.peer == "a" }
        #expect(a.map(\.service) == ["the status page (StatusListen 10.99.0.1:80)", "DNS to 192.168.1.1 (ClientDNS)",
                                     "DNS to 192.168.1.1 (ClientDNS)", "ping to the gateway (10.99.0.1)"])
        #expect(a.allSatisfy { $0.source.description == "10.99.0.7" && $0.tier == .premium })
        #expect(a[1].allowRule == "allow proto udp,tcp to 192.168.1.1 port 53")
        let new = full.gatewayProbes.filter { $0.peer == nil && $0.tier == .free }
        #expect(new.filter { $0.port == 53 }.map(\.destination.description) == ["10.99.0.1", "10.99.0.1"])
        #expect(new.first { $0.port == 53 }?.allowRule == "allow proto udp,tcp to gateway port 53")
    }
}
