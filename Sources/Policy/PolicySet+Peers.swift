import Core

extension PolicySet {
    /// One diagnostic per `peer NAME` in a rule that names no peer of `configured` (a typo, or a
    /// peer removed from the configuration: the rule then silently never matches). At the name's
    /// `file:line:column`, with did-you-mean. `tunnelctl policy check --config` reports them as
    /// warnings, `tunneld --check-config` as errors, tunneld at start logs them.
    public func unknownPeerReferences(configured: [String], severity: PolicyDiagnostic.Severity) -> [PolicyDiagnostic] {
        let known = Set(configured)
        var out: [PolicyDiagnostic] = []
        for r in rules.indices where !rules.peers(r).isEmpty {
            let rule = rules[r]
            for (i, name) in rule.peers.enumerated() where !known.contains(name) {
                var at = rule.location
                if i < rule.peerColumns.count { at.column = rule.peerColumns[i] }
                let list = configured.isEmpty ? "no peers are configured" : "configured: \(configured.joined(separator: ", "))"
                out.append(PolicyDiagnostic(severity, at, "'peer \(name)': no configured peer is called '\(name)'\(DidYouMean.suffix(name, configured)) (\(list)); the rule never matches that name"))
            }
        }
        return out
    }
}
