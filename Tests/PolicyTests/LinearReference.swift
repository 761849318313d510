import Core
import Packet

@testable import Policy

/// A flow for the slow reference: the peer by name, everything spelled out.
struct ReferenceFlow: CustomStringConvertible {
    var direction: Direction = .out
    var proto: IPProtocol
    var source: IPAddress
    var destination: IPAddress
    var sourcePort: UInt16 = 0
    var destinationPort: UInt16 = 0
    var peer: String? = nil
    var tier: PeerTier? = nil
    var host: String? = nil
    var minuteOfWeek = 0

    func query(_ p: CompiledPolicy) -> PolicyQuery {
        PolicyQuery(
            direction: direction, proto: proto, source: source, destination: destination, sourcePort: sourcePort,
            destinationPort: destinationPort, peer: peer.map(p.peerID(named:)) ?? .unknown, tier: tier, host: host,
            minuteOfWeek: minuteOfWeek)
    }

    var description: String {
        "\(proto) \(source):\(sourcePort) -> \(destination):\(destinationPort) \(direction) peer \(peer ?? "-") tier \(tier.map(\.description) ?? "-") host \(host ?? "-") minute \(minuteOfWeek)"
    }
}

/// The obvious first-match scan, written straight from the rule language (docs/policy.md,
/// tunnelvision-rules(5)): the oracle the compiled evaluator must agree with. `gateway` is what
/// `from|to gateway` stands for (the rules here are unbound; none = no address).
enum LinearReference {
    static func matches(_ r: PolicyRule, _ f: ReferenceFlow, gateway: [IPAddress] = []) -> Bool {
        func address(_ list: [IPPrefix], _ named: Bool, _ a: IPAddress) -> Bool {
            if list.isEmpty && !named { return true }
            return list.contains { $0.contains(a) } || (named && gateway.contains(a))
        }
        if r.direction != f.direction { return false }
        if !r.peers.isEmpty && !(f.peer.map(r.peers.contains) ?? false) { return false }
        if let t = r.tier, f.tier != t { return false }
        if !r.protocols.isEmpty && !r.protocols.contains(f.proto) { return false }
        if !address(r.sources, r.sourceGateway, f.source) { return false }
        if !address(r.destinations, r.destinationGateway, f.destination) { return false }
        if !r.sourcePorts.isEmpty && !(f.proto.hasPorts && r.sourcePorts.contains { $0.contains(f.sourcePort) }) { return false }
        if !r.destinationPorts.isEmpty && !(f.proto.hasPorts && r.destinationPorts.contains { $0.contains(f.destinationPort) }) {
            return false
        }
        if !r.hosts.isEmpty && !(f.host.map { h in r.hosts.contains { $0.matches(h) } } ?? false) { return false }
        if let w = r.window, !w.contains(minuteOfWeek: f.minuteOfWeek) { return false }
        return true
    }

    /// (action, rule index or -1).
    static func evaluate(_ rules: [PolicyRule], out: Verdict, in inbound: Verdict, _ f: ReferenceFlow,
                         gateway: [IPAddress] = []) -> (Verdict, Int) {
        for (i, r) in rules.enumerated() where matches(r, f, gateway: gateway) { return (r.action, i) }
        return (f.direction == .out ? out : inbound, -1)
    }
}

extension LinearReference {
    /// A name `pattern` matches and no more specific pattern can single out: the name itself, or
    /// a fresh label just below the suffix.
    static func representative(_ pattern: HostPattern) -> String {
        switch pattern {
        case .exact(let name): return name
        case .subdomains(let suffix): return "fresh-label-0." + suffix
        }
    }

    /// Host names that together reach every host class `rules` can tell apart: no host, each
    /// pattern's representative, and a name no rule lists.
    static func hostCandidates(_ rules: [PolicyRule]) -> [String?] {
        var names = Set<String>()
        for r in rules { for h in r.hosts { names.insert(representative(h)) } }
        return [nil, "nothing-listed.invalid"] + names.sorted()
    }

    /// The slow answer to "could learning the host change this flow's action?": the flow's action
    /// under each host candidate against its host-less action. (The host rules before the
    /// host-less deciding rule that match every other field are found once, then each candidate
    /// takes the first of them its name matches.)
    static func actionDependsOnHost(_ rules: [PolicyRule], candidates: [String?]? = nil, out: Verdict, in inbound: Verdict,
                                    _ f: ReferenceFlow) -> Bool
    {
        var plain = f
        plain.host = nil
        let (a, i) = evaluate(rules, out: out, in: inbound, plain)
        let before = rules[..<(i >= 0 ? i : rules.count)].filter { r in
            guard let h = r.hosts.first else { return false }
            var g = plain
            g.host = representative(h)
            return matches(r, g)
        }
        return (candidates ?? hostCandidates(rules)).contains { c in
            guard let c else { return false }
            let first = before.first { r in r.hosts.contains { $0.matches(c) } }
            return (first?.action ?? a) != a
        }
    }
}
