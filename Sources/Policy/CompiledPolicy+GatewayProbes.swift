import Core

extension CompiledPolicy {
    /// One warning per service and refusing rule: which of `probes` (flows peers must be able to
    /// start to the gateway's own services) this policy does not allow, at any time of the week
    /// (each `during` boundary is tried), the rule that decides (its place is the warning's
    /// place), the peers it refuses, what they see and a rule that would allow it. Empty when
    /// every probe is allowed.
    public func refusals(of probes: [GatewayProbe]) -> [PolicyDiagnostic] {
        struct Key: Hashable {
            var service: String
            var rule: Int32
            var direction: Direction
        }
        var order: [Key] = []
        // Per key: the first probe, the action, the configured peers and the tiers of new peers.
        var found: [Key: (probe: GatewayProbe, action: Verdict, peers: [String], tiers: [String])] = [:]
        let minutes = [0] + timeBoundaries
        for p in probes {
            let peer = p.peer.map { peerID(named: $0) } ?? .unknown
            for m in minutes {
                let q = PolicyQuery(direction: .out, proto: p.proto, source: p.source, destination: p.destination,
                                    sourcePort: 40_000, destinationPort: p.port, peer: peer, tier: p.tier, minuteOfWeek: m)
                let v = evaluate(q)
                guard v.action != .allow else { continue }
                let key = Key(service: p.service, rule: v.ruleIndex, direction: v.direction)
                if found[key] == nil {
                    order.append(key)
                    found[key] = (p, v.action, [], [])
                }
                if let name = p.peer {
                    if !found[key]!.peers.contains(name) { found[key]!.peers.append(name) }
                } else if !found[key]!.tiers.contains(p.tier.rawValue) {
                    found[key]!.tiers.append(p.tier.rawValue)
                }
                break
            }
        }
        return order.map { key in
            let (p, action, peers, tiers) = found[key]!
            let verb = action == .reject ? "rejects" : "blocks"
            var who = Array(peers.prefix(5))
            if peers.count > 5 { who.append("\(peers.count - 5) more") }
            if !tiers.isEmpty { who.append("a new peer (tier \(tiers.joined(separator: " or ")))") }
            let shown = who.joined(separator: ", ")
            let location: SourceLocation
            var what: String
            if key.rule >= 0 {
                let i = Int(key.rule)
                location = rules.location(i)
                what = "this rule (\(rules.text(i)))"
                if let w = rules.window(i) { what += ", during \(w)," }
            } else {
                let d = defaultOut
                location = d.location ?? SourceLocation(file: "(built-in default)", line: 0, column: 0)
                what = "the default (\(d.text))"
            }
            return PolicyDiagnostic(.warning, location,
                "\(what) \(verb) \(p.service) for \(shown): \(p.symptom); to allow it, put '\(p.allowRule)' before it")
        }
    }
}
