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

/// The obvious first-match scan, written straight from DESIGN.md §5: the oracle the compiled
/// evaluator must agree with.
enum LinearReference {
    static func matches(_ r: PolicyRule, _ f: ReferenceFlow) -> Bool {
        if r.direction != f.direction { return false }
        if !r.peers.isEmpty && !(f.peer.map(r.peers.contains) ?? false) { return false }
        if let t = r.tier, f.tier != t { return false }
        if !r.protocols.isEmpty && !r.protocols.contains(f.proto) { return false }
        if !r.sources.isEmpty && !r.sources.contains(where: { $0.contains(f.source) }) { return false }
        if !r.destinations.isEmpty && !r.destinations.contains(where: { $0.contains(f.destination) }) { return false }
        if !r.sourcePorts.isEmpty && !(f.proto.hasPorts && r.sourcePorts.contains { $0.contains(f.sourcePort) }) { return false }
        if !r.destinationPorts.isEmpty && !(f.proto.hasPorts && r.destinationPorts.contains { $0.contains(f.destinationPort) }) {
            return false
        }
        if !r.hosts.isEmpty && !(f.host.map { h in r.hosts.contains { $0.matches(h) } } ?? false) { return false }
        if let w = r.window, !w.contains(minuteOfWeek: f.minuteOfWeek) { return false }
        return true
    }

    /// (action, rule index or -1).
    static func evaluate(_ rules: [PolicyRule], out: Verdict, in inbound: Verdict, _ f: ReferenceFlow) -> (Verdict, Int) {
        for (i, r) in rules.enumerated() where matches(r, f) { return (r.action, i) }
        return (f.direction == .out ? out : inbound, -1)
    }
}
