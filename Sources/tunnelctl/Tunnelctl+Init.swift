import Config
import Core
import Glibc
import Policy
import Runtime
import WireGuard

/// `tunnelctl init`: the first run on a router. Reads what the host's networking says
/// (`HostNetwork`: routes, addresses, who listens on port 53), chooses with `FirstRunConfig`
/// (pure: the subnet, the text), then writes the gateway's private key (0600), a commented
/// `tunneld.conf` (0640) and, into a policy directory without rule files, the default policy set
/// (`defaultPolicySet`). Never overwrites the configuration or the key; needs no daemon.
extension Tunnelctl {
    static let runInit: Command.Body = { opts, console in
        try opts.finish()
        let configPath = opts[.config] ?? TunnelConfig.defaultPath
        let dir = directoryOf(configPath)
        let keyPath = (dir == "/" ? "" : dir) + "/private.key"
        let policyDir = (dir == "/" ? "" : dir) + "/policies"
        for path in [configPath, keyPath] where Sys.exists(path) {
            throw CLIError.failure("\(path) exists: init never overwrites a configuration or a key (nothing written); "
                + "edit it, or move it away to start over")
        }
        let host = hostNetwork()
        var port: UInt16 = 51820
        if let text = opts[.listenPort] {
            guard let p = HostPort.parsePort(text), p != 0 else { throw CLIError.usage("--listen-port '\(text)' is not a port (1-65535)") }
            port = p
        }

        // The tunnel subnets: free of every route and address of this host.
        let inUse = host.prefixesInUse
        func overlapping(_ p: IPPrefix) -> String {
            let hits = host.routes.filter { $0.destination.length > 0 && ($0.destination.contains(p.address) || p.contains($0.destination.address)) }
                .map { "\($0.destination) (route, \($0.interface))" }
                + host.addresses.filter { $0.address.subnet.contains(p.address) || p.contains($0.address.address) }
                .map { "\($0.address) (address of \($0.interface))" }
            return hits.joined(separator: ", ")
        }
        let subnet: IPPrefix
        if let text = opts[.subnet] {
            guard let p = IPPrefix(text), !p.address.isIPv6, p.length >= 8, p.length <= 30 else {
                throw CLIError.usage("--subnet '\(text)' is not an IPv4 subnet of /8 to /30, e.g. 10.99.0.0/24")
            }
            guard let free = FirstRunConfig.freeSubnet(preferred: p, inUse: inUse, searching: false) else {
                throw CLIError.failure("--subnet \(p) overlaps \(overlapping(p)) on this host; choose another (nothing written)")
            }
            subnet = free
        } else {
            guard let free = FirstRunConfig.freeSubnet(preferred: FirstRunConfig.defaultSubnet, inUse: inUse, searching: true) else {
                throw CLIError.failure("no /24 of 10.0.0.0/8 is free of this host's routes and addresses; give --subnet (nothing written)")
            }
            subnet = free
        }
        var subnet6: IPPrefix?
        switch opts[.subnet6] {
        case "off"?, "none"?:
            subnet6 = nil
        case let text?:
            guard let p = IPPrefix(text), p.address.isIPv6, p.length >= 48, p.length <= 126 else {
                throw CLIError.usage("--subnet6 '\(text)' is not an IPv6 subnet of /48 to /126, e.g. fd99::/64, or off")
            }
            guard FirstRunConfig.freeSubnet(preferred: p, inUse: inUse, searching: false) != nil else {
                throw CLIError.failure("--subnet6 \(p) overlaps \(overlapping(p)) on this host; choose another (nothing written)")
            }
            subnet6 = p
        case nil:
            // A random unique local /64 (RFC 4193); drawn again in the unlikely case it is in use.
            var random = SystemRandomNumberGenerator()
            for _ in 0..<8 {
                let p = FirstRunConfig.uniqueLocalSubnet(globalID: random.next())
                if FirstRunConfig.freeSubnet(preferred: p, inUse: inUse, searching: false) != nil { subnet6 = p; break }
            }
        }

        // The WAN interface and the endpoint clients dial.
        let wan = opts[.wan] ?? host.wanInterface
        if let w = opts[.wan], !host.addresses.contains(where: { $0.interface == w }) {
            let names = Set(host.addresses.map(\.interface)).sorted()
            throw CLIError.usage("--wan \(w): no interface of that name has an address here (\(names.joined(separator: ", ")))")
        }
        var endpoint: HostPort?
        var guessed = false
        if let text = opts[.endpoint] {
            if let e = HostPort(text) {
                endpoint = e
            } else if !text.isEmpty, let a = IPAddress(text) {
                endpoint = HostPort(host: a.description, port: port)
            } else if !text.isEmpty, !text.contains(":"), text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.".contains($0)) }) {
                endpoint = HostPort(host: text, port: port)
            } else {
                throw CLIError.usage("--endpoint '\(text)' is neither HOST nor HOST:PORT (vpn.example.org, 203.0.113.5:51820, [2001:db8::5]:51820)")
            }
        } else if let w = wan, let a = host.publicAddress(of: w) {
            endpoint = HostPort(host: a.description, port: port)
            guessed = true
        }

        // The clients' resolver.
        var config = FirstRunConfig(subnet: subnet, subnet6: subnet6, privateKeyFile: keyPath, policyDirectory: policyDir)
        let gw = config.gatewayAddress
        let dnsNote: String
        if let text = opts[.dns] {
            if text == "none" || text == "off" {
                config.dnsWhy = "None, as tunnelctl init --dns \(text) asked: clients keep the resolver they have."
                dnsNote = "none (--dns \(text))"
            } else {
                switch FirstRunConfig.parseClientDNS(text) {
                case .success(let list): config.clientDNS = list
                case .failure(let e): throw CLIError.usage("--dns: \(e)")
                }
                config.dnsWhy = "As given to tunnelctl init --dns."
                dnsNote = config.clientDNS.joined(separator: ", ")
            }
        } else if host.resolverOnEveryAddress {
            config.clientDNS = [gw.description]
            config.dnsWhy = "A resolver listened on port 53 of every address when init ran, so it answers on \(gw) too."
            dnsNote = "\(gw) (a resolver listens on port 53 of every address)"
        } else {
            let seen = Set(host.dnsListeners).sorted { $0.description < $1.description }.map { "\($0)" }
            let found = seen.isEmpty ? "No resolver listened on port 53 when init ran"
                : "A resolver listened on port 53 of \(seen.joined(separator: ", ")) only, not of every address"
            config.dnsWhy = "\(found): make one answer on \(gw) (dnsmasq, unbound: docs/operations.md)\nand uncomment this, or name a resolver peers may reach."
            dnsNote = "none: \(found.prefix(1).lowercased() + found.dropFirst()); make one answer on \(gw) "
                + "(docs/operations.md: dnsmasq or unbound), then set ClientDNS = \(gw) in \(configPath)"
        }
        config.listenPort = port
        config.endpoint = endpoint
        config.endpointGuessed = guessed
        config.wan = wan

        let date = String(TimeText.iso(cliNow()).prefix(10))
        let text = config.render(header: "\(configPath): written by tunnelctl init (TunnelVision \(version)), \(date)")
        let parsed: TunnelConfig
        do { parsed = try TunnelConfig.parse(text, file: configPath, baseDirectory: dir) } catch {
            throw CLIError.failure("init made a configuration that does not parse (nothing written):\n\(error)")
        }

        // Write: the directory, the key, the configuration (the key goes again if that fails).
        let privateKey = X25519.generatePrivateKey(SystemRandom())
        let publicKey = WireGuardKey(bytes: X25519.publicKey(of: privateKey))!
        do {
            try makeDirectories(dir, 0o755)
            try AtomicFile.create(keyPath, contents: Array((WireGuardKey(bytes: privateKey)!.base64 + "\n").utf8), mode: 0o600)
        } catch {
            throw CLIError.failure("cannot write \(keyPath): \(error) (nothing written)")
        }
        do {
            try AtomicFile.create(configPath, contents: Array(text.utf8), mode: 0o640)
        } catch {
            try? Sys.unlinkIfPresent(keyPath)
            throw CLIError.failure("cannot write \(configPath): \(error) (nothing written)")
        }
        let existing = ((try? Sys.directoryEntries(policyDir)) ?? []).filter { $0.hasSuffix(".rules") && !$0.hasPrefix(".") }
        let policyLine: String
        if existing.isEmpty {
            do {
                try makeDirectories(policyDir, 0o755)
                for (name, rules) in defaultPolicySet {
                    try AtomicFile.create(policyDir + "/" + name, contents: Array(rules.utf8), mode: 0o644)
                }
            } catch {
                throw CLIError.failure("\(configPath) and \(keyPath) are written, but the default policy could not be: \(error); "
                    + "copy policies/*.rules into \(policyDir)")
            }
            policyLine = "the default policy set (\(defaultPolicySet.map(\.name).joined(separator: ", ")))"
        } else {
            policyLine = "kept: it has \(existing.count) rule file\(existing.count == 1 ? "" : "s") already"
        }

        let custom = configPath == TunnelConfig.defaultPath ? "" : " --config \(configPath)"
        // Rules that were there already may not fit this configuration (peers it does not have,
        // the gateway's services refused): say so now rather than at tunneld's first start.
        var kept: [String] = []
        if !existing.isEmpty, let set = try? loadPolicy(policyDir, config: parsed) {
            kept = set.errors.map(\.description) + set.unknownPeerReferences(configured: [], severity: .error).map(\.description)
            if !set.hasErrors { kept += CompiledPolicy(set).refusals(of: parsed.gatewayProbes).map(\.description) }
        }
        var lines = [
            "tunnelctl init: wrote",
            "  \(keyPath)  the gateway's private key (0600); its public key is \(publicKey.base64)",
            "  \(configPath)  tunnel \(subnet)\(subnet6.map { " and \($0)" } ?? ""), gateway \(gw)\(config.gatewayAddress6.map { " and \($0)" } ?? "")",
            "  \(policyDir)/  \(policyLine)",
            "WAN interface: \(wan ?? "none found (no default route); give --wan IFACE")",
            "endpoint for clients: " + (endpoint.map { "\($0)" + (guessed ? " (the address of \(wan!) now: set PublicEndpoint to a public name if it changes or the router is behind NAT)" : "") }
                ?? "none: set PublicEndpoint = HOST:\(port) in \(configPath) (peer add needs it)"),
            "ClientDNS: \(dnsNote)",
            "",
            "next:",
            "  tunneld --check-config\(custom)",
            "  systemctl enable --now tunneld" + (custom.isEmpty ? "" : "    (the unit reads \(TunnelConfig.defaultPath))"),
            "  tunnelctl peer add phone --qr\(custom)",
        ]
        if !kept.isEmpty {
            lines += ["", "The rules kept in \(policyDir) do not fit this configuration yet (tunneld --check-config\(custom) refuses errors):"]
            lines += kept.map { "  " + $0 }
        }
        let nat = routerNatPath()
        let forwarding = (try? Sys.readFile("/proc/sys/net/ipv4/ip_forward", limit: 16)).map { String(decoding: $0, as: UTF8.self).trimmedSpaces() }
        lines.append("")
        lines.append("Forwarding and NAT to the Internet are the router's (tunneld never touches the firewall)"
            + (forwarding == "0" ? "; IPv4 forwarding is off now" : "") + ":")
        lines.append("  \(nat) up --subnet \(subnet)\(subnet6.map { " --subnet6 \($0)" } ?? "")\(wan.map { " --out \($0)" } ?? "")"
            + "    ('install' instead of 'up' keeps it across reboots)")
        console.print(lines.joined(separator: "\n"))
        return .ok
    }

    /// What the kernel says about this host's routes, addresses and port-53 sockets (tables that
    /// cannot be read count as empty: init then proposes its defaults).
    static func hostNetwork() -> HostNetwork {
        func read(_ path: String) -> String {
            (try? Sys.readFile(path, limit: 16 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
        var host = HostNetwork()
        host.routes = HostNetwork.ipv4Routes(read("/proc/net/route")) + HostNetwork.ipv6Routes(read("/proc/net/ipv6_route"))
        host.addresses = interfaceAddresses()
        for (file, tcp) in [("/proc/net/udp", false), ("/proc/net/udp6", false), ("/proc/net/tcp", true), ("/proc/net/tcp6", true)] {
            host.dnsListeners += HostNetwork.listeners(read(file), tcp: tcp, port: 53)
        }
        return host
    }

    /// Every address of every interface (`getifaddrs(3)`), with its prefix length.
    static func interfaceAddresses() -> [HostNetwork.Address] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0 else { return [] }
        defer { freeifaddrs(head) }
        var out: [HostNetwork.Address] = []
        var next = head
        while let entry = next {
            next = entry.pointee.ifa_next
            guard let sa = entry.pointee.ifa_addr, let mask = entry.pointee.ifa_netmask else { continue }
            let name = String(cString: entry.pointee.ifa_name)
            switch Int32(sa.pointee.sa_family) {
            case AF_INET:
                let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
                let m = mask.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
                out.append(HostNetwork.Address(interface: name, address: InterfaceAddress(address: IPAddress(v4: a), prefixLength: m.nonzeroBitCount)))
            case AF_INET6:
                func words(_ p: UnsafeMutablePointer<sockaddr>) -> (UInt64, UInt64) {
                    p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { s in
                        withUnsafeBytes(of: s.pointee.sin6_addr) { b in
                            (b.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, b.suffix(8).reduce(0) { $0 << 8 | UInt64($1) })
                        }
                    }
                }
                let (h, l) = words(sa)
                let (mh, ml) = words(mask)
                out.append(HostNetwork.Address(interface: name, address: InterfaceAddress(
                    address: IPAddress(v6High: h, low: l), prefixLength: mh.nonzeroBitCount + ml.nonzeroBitCount)))
            default:
                continue
            }
        }
        return out
    }

    /// The router-nat helper beside this tunnelctl (`BIN/../lib/tunnelvision/router-nat.sh`, as the
    /// package and install.sh lay it out), else the source tree's.
    static func routerNatPath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 {
            let exe = String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let candidate = directoryOf(directoryOf(exe)) + "/lib/tunnelvision/router-nat.sh"
            if Sys.exists(candidate) { return candidate }
        }
        return "scripts/router-nat.sh"
    }

    /// The directory part of `path` (`.` when it has none).
    static func directoryOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `mkdir -p` with `mode` for the directories it makes.
    static func makeDirectories(_ path: String, _ mode: mode_t) throws(SystemError) {
        if path.isEmpty || path == "/" || path == "." || Sys.exists(path) { return }
        try makeDirectories(directoryOf(path), mode)
        try Sys.mkdirIfMissing(path, mode)
    }
}
