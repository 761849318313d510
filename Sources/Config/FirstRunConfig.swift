import Core

/// The `tunneld.conf` that `tunnelctl init` writes, and the choices behind it: pure, so the
/// subnet choice and the text are tested without a host (the command gathers `HostNetwork`, the
/// key and the date, and writes the files).
public struct FirstRunConfig: Sendable, Hashable {
    /// The tunnel's IPv4 subnet; the gateway takes its first host.
    public var subnet: IPPrefix
    /// The tunnel's IPv6 subnet (a ULA /64 unless told otherwise); nil = none.
    public var subnet6: IPPrefix?
    public var listenPort: UInt16 = 51820
    /// Where clients reach the gateway: `--endpoint`, else the WAN interface's address (nil: none
    /// known; the key is then written commented out).
    public var endpoint: HostPort?
    /// True when `endpoint` was guessed from the WAN interface rather than given.
    public var endpointGuessed = false
    /// The interface of the default route (`--wan`, else detected); nil: none.
    public var wan: String?
    /// `ClientDNS`; empty = none (`dnsWhy` says why).
    public var clientDNS: [String] = []
    /// Why `ClientDNS` is what it is, for the comment above it.
    public var dnsWhy: String = ""
    public var privateKeyFile: String
    public var policyDirectory: String
    /// The interface name.
    public var name = "tv0"

    public init(subnet: IPPrefix, subnet6: IPPrefix?, privateKeyFile: String, policyDirectory: String) {
        self.subnet = subnet
        self.subnet6 = subnet6
        self.privateKeyFile = privateKeyFile
        self.policyDirectory = policyDirectory
    }

    /// The gateway's address in `subnet`: its first host.
    public var gatewayAddress: IPAddress { IPAddress(v4: subnet.address.v4 &+ 1) }
    /// The gateway's address in `subnet6`: `::1` of it.
    public var gatewayAddress6: IPAddress? { subnet6.map { IPAddress(v6High: $0.address.high, low: $0.address.low | 1) } }

    /// The first IPv4 tunnel subnet init proposes, when `--subnet` is not given.
    public static let defaultSubnet = IPPrefix("10.99.0.0/24")!

    /// The subnet to use: `preferred` when it overlaps nothing in `inUse`, else (when it was not
    /// asked for by name) the next free /24 of 10.0.0.0/8 after it (10.99.1.0/24, …, 10.255.255.0/24,
    /// then 10.0.0.0/24 onwards). Nil when none is free (or the one asked for is not).
    public static func freeSubnet(preferred: IPPrefix, inUse: [IPPrefix], searching: Bool) -> IPPrefix? {
        func free(_ p: IPPrefix) -> Bool { !inUse.contains { $0.address.isIPv6 == p.address.isIPv6 && ($0.contains(p.address) || p.contains($0.address)) } }
        if free(preferred) { return preferred }
        guard searching, !preferred.address.isIPv6, preferred.length == 24, preferred.address.v4 >> 24 == 10 else { return nil }
        let start = (preferred.address.v4 >> 8) & 0xFFFF  // the /24's index in 10.0.0.0/8
        for k in 1..<0x10000 {
            let index = (start + UInt32(k)) & 0xFFFF
            let p = IPPrefix(IPAddress(v4: 0x0A00_0000 | index << 8), length: 24)!
            if free(p) { return p }
        }
        return nil
    }

    /// `--dns` as `ClientDNS` takes it (addresses and search domains).
    public static func parseClientDNS(_ text: String) -> Result<[String], ValueError> { ConfigValue.dnsList(text) }

    /// A unique local /64 (RFC 4193 §3.2): `fd` + the 40-bit global ID `globalID` (random, from
    /// the caller) + subnet 0.
    public static func uniqueLocalSubnet(globalID: UInt64) -> IPPrefix {
        let high = 0xFD00_0000_0000_0000 | (globalID & 0xFF_FFFF_FFFF) << 16
        return IPPrefix(IPAddress(v6High: high, low: 0), length: 64)!
    }

    /// The commented configuration file. `header` names the file, the version and the date.
    public func render(header: String) -> String {
        let gw = gatewayAddress
        var addresses = "\(gw)/\(subnet.length)"
        if let g6 = gatewayAddress6, let s6 = subnet6 { addresses += ", \(g6)/\(s6.length)" }
        var lines: [String] = [
            "# \(header)",
            "#",
            "# wg-quick style: [Interface] and [Peer] sections with WireGuard's keys, plus TunnelVision's own.",
            "# Keys are case-insensitive; '#' starts a comment; `man tunneld.conf` describes every key.",
            "# Check this file and the policy without starting anything:  tunneld --check-config",
            "# Peers: `tunnelctl peer add NAME` appends a [Peer] section below and prints the client's config.",
            "",
            "[Interface]",
            "# The interface name (`wg show \(name)` works too).",
            "Name = \(name)",
            "# The gateway's private key (mode 0600, written by tunnelctl init). Its public key: wg pubkey < \(privateKeyFile)",
            "PrivateKeyFile = \(privateKeyFile)",
            "ListenPort = \(listenPort)",
            "# The gateway's addresses inside the tunnel: subnets no route or address of this host used when",
            "# init ran. New peers get the next free addresses of them (tunnelctl peer add --ip auto).",
            "Address = \(addresses)",
            "MTU = 1420",
            "",
            "# Where clients reach this gateway: the Endpoint of every client config.",
        ]
        if let endpoint {
            if endpointGuessed {
                lines.append("# This is the address of \(wan ?? "the WAN interface") when init ran: if it changes, or the router is behind")
                lines.append("# NAT, write the name or address clients reach it at, e.g. vpn.example.org:\(listenPort).")
            }
            lines.append("PublicEndpoint = \(endpoint)")
        } else {
            lines.append("# No WAN address was found when init ran: write the name or address clients reach this")
            lines.append("# router at (tunnelctl peer add needs it).")
            lines.append("# PublicEndpoint = vpn.example.org:\(listenPort)")
        }
        lines += [
            "",
            "# Each peer's own status page inside the tunnel (http://\(gw)/): tier, time left, quota.",
            "StatusListen = \(gw):80",
            "# Prometheus /metrics, on loopback only (tunnelctl metrics prints the same text).",
            "MetricsListen = 127.0.0.1:9586",
            "",
            "# The resolver in every client config's DNS line (tunnelctl peer add|config|qr).",
        ]
        for line in dnsWhy.split(separator: "\n") { lines.append("# " + line) }
        lines.append(clientDNS.isEmpty ? "# ClientDNS = \(gw)" : "ClientDNS = \(clientDNS.joined(separator: ", "))")
        lines += [
            "",
            "# Policy rule files (`man tunnelvision-rules`). The default set lets peers reach the gateway's",
            "# DNS, status page and ping, and keeps them off the router's private networks.",
            "PolicyDirectory = \(policyDirectory)",
            "# StateDirectory = /var/lib/tunnelvision      # state.db, capture/ (default)",
            "# RuntimeDirectory = /run/tunnelvision        # control.sock, live.ring (default)",
            "",
            "# The free tier, every new peer's unless `peer add --tier premium`: connected time per window,",
            "# then the pause before the next one.",
            "FreeSession = 15m",
            "FreePause = 45m",
            "",
            "# Forwarding and NAT are the router's: tunneld never touches the firewall. router-nat.sh sets",
            "# them up for \(subnet)\(subnet6.map { " and \($0)" } ?? "") out of \(wan ?? "the WAN interface") (docs/operations.md).",
            "",
        ]
        return lines.joined(separator: "\n")
    }
}
