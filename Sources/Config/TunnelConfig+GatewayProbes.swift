import Core

extension TunnelConfig {
    /// The flows peers must be able to start to the gateway's own services, for the policy to be
    /// judged by (`CompiledPolicy.refusals(of:)`): the status page when `StatusListen` is on a
    /// tunnel address; DNS (UDP and TCP port 53) to every address of the `ClientDNS` a client
    /// config gets (the `[Interface]`'s, or the peer's own); a ping (ICMP, ICMPv6) to each
    /// tunnel address. Asked for every enabled configured peer (its name, tier and first
    /// AllowedIPs address of the family) and for a new peer of each configured tier (an address
    /// of the interface subnet that is not the gateway's), so a policy that names no peer is
    /// checked too.
    public var gatewayProbes: [GatewayProbe] {
        let gateway = interface.addresses
        guard !gateway.isEmpty else { return [] }
        struct Who {
            var name: String?
            var tier: PeerTier
            var v4: IPAddress?
            var v6: IPAddress?
            var dns: [String]
        }
        func newPeerAddress(_ v6: Bool) -> IPAddress? {
            guard let a = gateway.first(where: { $0.address.isIPv6 == v6 }) else { return nil }
            let net = a.subnet.address
            let first = v6 ? IPAddress(v6High: net.high, low: net.low &+ 1) : IPAddress(v4: net.v4 &+ 1)
            let second = v6 ? IPAddress(v6High: net.high, low: net.low &+ 2) : IPAddress(v4: net.v4 &+ 2)
            let pick = first == a.address ? second : first
            return a.subnet.contains(pick) ? pick : a.address
        }
        var who: [Who] = tiers.names.map { Who(name: nil, tier: $0, v4: newPeerAddress(false), v6: newPeerAddress(true), dns: interface.clientDNS) }
        for p in peers where !p.disabled {
            who.append(Who(name: p.name, tier: p.tier, v4: p.allowedIPs.first { !$0.address.isIPv6 }?.address,
                           v6: p.allowedIPs.first { $0.address.isIPv6 }?.address, dns: clientDNS(of: p)))
        }
        var out: [GatewayProbe] = []
        for w in who {
            func source(_ destination: IPAddress) -> IPAddress? { destination.isIPv6 ? w.v6 : w.v4 }
            if let listen = interface.statusListen, gateway.contains(where: { $0.address == listen.address }),
                let src = source(listen.address)
            {
                out.append(GatewayProbe(
                    service: "the status page (StatusListen \(listen))", symptom: "the page times out",
                    allowRule: "allow proto tcp to gateway port \(listen.port)", proto: .tcp, source: src,
                    destination: listen.address, port: listen.port, peer: w.name, tier: w.tier))
            }
            for item in w.dns {
                guard let resolver = IPAddress(item), let src = source(resolver) else { continue }
                let isGateway = gateway.contains { $0.address == resolver }
                let rule = "allow proto udp,tcp to \(isGateway ? "gateway" : item) port 53"
                for proto in [IPProtocol.udp, .tcp] {
                    out.append(GatewayProbe(
                        service: "DNS to \(item) (ClientDNS)", symptom: "their name lookups time out",
                        allowRule: rule, proto: proto, source: src, destination: resolver, port: 53, peer: w.name, tier: w.tier))
                }
            }
            for a in gateway {
                guard let src = source(a.address) else { continue }
                out.append(GatewayProbe(
                    service: "ping to the gateway (\(a.address))", symptom: "ping to the gateway gets no answer",
                    allowRule: "allow proto icmp,icmpv6 to gateway", proto: a.address.isIPv6 ? .icmpv6 : .icmp, source: src,
                    destination: a.address, port: 0, peer: w.name, tier: w.tier))
            }
        }
        return out
    }
}
