import Core
import Packet

/// Semantic warnings: rules that can never match, and rules shadowed by an earlier rule.
enum PolicyAnalysis {
    /// Above this many rules the quadratic shadowing check is skipped (it is advice, not safety).
    static let shadowCheckLimit = 1_000

    static func warnings(for rules: PolicyRules) -> [PolicyDiagnostic] {
        var out: [PolicyDiagnostic] = []
        // The per-rule checks read the columns: no rule value is built for them.
        for i in rules.indices {
            let protocols = rules.protocols(i)
            let portless = !protocols.isEmpty && protocols.allSatisfy { !$0.hasPorts }
            if portless && (!rules.sourcePorts(i).isEmpty || !rules.destinationPorts(i).isEmpty) {
                out.append(PolicyDiagnostic(.warning, rules.location(i), "ports only exist for tcp and udp; this rule (proto \(protocols.map(\.description).joined(separator: ","))) never matches"))
            }
            let fromFamilies = families(rules.sources(i), gateway: rules.sourceGateway(i))
            let toFamilies = families(rules.destinations(i), gateway: rules.destinationGateway(i))
            if fromFamilies & toFamilies == 0 {
                out.append(PolicyDiagnostic(.warning, rules.location(i), "'from' and 'to' are of different address families (IPv4 vs IPv6); this rule never matches"))
            } else if !protocols.isEmpty {
                let addr = fromFamilies & toFamilies
                let protoOK = protocols.contains { p in
                    p == .icmp ? addr & 1 != 0 : p == .icmpv6 ? addr & 2 != 0 : true
                }
                if !protoOK {
                    out.append(PolicyDiagnostic(.warning, rules.location(i), "icmp is for IPv4 and icmpv6 for IPv6; with these addresses this rule never matches"))
                }
            }
        }
        var named: [String: Int] = [:]
        for i in rules.indices {
            guard let n = rules.name(i) else { continue }
            if let first = named[n] {
                out.append(PolicyDiagnostic(.warning, rules.location(i), "name '\(n)' is already used by \(rules.location(first)); explanations will be ambiguous"))
            } else {
                named[n] = i
            }
        }
        guard rules.count <= shadowCheckLimit else { return out }
        let rules = Array(rules)
        for j in rules.indices {
            for i in 0..<j where covers(rules[i], rules[j]) {
                out.append(PolicyDiagnostic(.warning, rules[j].location,
                    "rule never decides anything: every flow it matches is matched first by \(rules[i].location) (\(rules[i].text))"))
                break
            }
        }
        return out
    }

    /// Bit 0: some IPv4 matches; bit 1: some IPv6 matches (empty list = both). `gateway` may
    /// stand for either family (the addresses are bound later).
    static func families(_ prefixes: some Collection<IPPrefix>, gateway: Bool = false) -> Int {
        if prefixes.isEmpty || gateway { return 3 }
        return prefixes.reduce(0) { $0 | ($1.address.isIPv6 ? 2 : 1) }
    }

    /// True when every flow matching `b` also matches `a`.
    static func covers(_ a: PolicyRule, _ b: PolicyRule) -> Bool {
        guard a.direction == b.direction else { return false }
        if let t = a.tier, b.tier != t { return false }
        if !a.peers.isEmpty && (b.peers.isEmpty || !b.peers.allSatisfy(a.peers.contains)) { return false }
        if !a.protocols.isEmpty && (b.protocols.isEmpty || !b.protocols.allSatisfy(a.protocols.contains)) { return false }
        if let w = a.window, b.window != w { return false }
        // `gateway` is a set of addresses not known here: only `gateway` (or any address) covers it,
        // and it covers no written address.
        func prefixesCover(_ x: [IPPrefix], _ xGateway: Bool, _ y: [IPPrefix], _ yGateway: Bool) -> Bool {
            if x.isEmpty && !xGateway { return true }
            if y.isEmpty && !yGateway { return false }
            if yGateway && !xGateway { return false }
            return y.allSatisfy { p in x.contains { $0.length <= p.length && $0.contains(p.address) } }
        }
        func portsCover(_ x: [PortRange], _ y: [PortRange]) -> Bool {
            x.isEmpty || (!y.isEmpty && y.allSatisfy { p in x.contains { $0.lower <= p.lower && $0.upper >= p.upper } })
        }
        guard prefixesCover(a.sources, a.sourceGateway, b.sources, b.sourceGateway),
            prefixesCover(a.destinations, a.destinationGateway, b.destinations, b.destinationGateway),
            portsCover(a.sourcePorts, b.sourcePorts), portsCover(a.destinationPorts, b.destinationPorts)
        else { return false }
        if a.hosts.isEmpty { return true }
        guard !b.hosts.isEmpty else { return false }
        if a.hosts.count <= 64 {
            return b.hosts.allSatisfy { hb in
                a.hosts.contains { ha in
                    switch (ha, hb) {
                    case (.exact(let x), .exact(let y)): return x == y
                    case (.subdomains(let s), .exact(let y)): return HostPattern.subdomains(of: s).matches(y)
                    case (.subdomains(let s), .subdomains(let t)): return s == t || HostPattern.subdomains(of: s).matches(t)
                    case (.exact, .subdomains): return false
                    }
                }
            }
        }
        // A long list (`host @file`): look names up instead of comparing every pair.
        var exact: Set<String> = []
        var below: Set<String> = []
        for h in a.hosts {
            switch h {
            case .exact(let x): exact.insert(x)
            case .subdomains(let s): below.insert(s)
            }
        }
        func underListedSuffix(_ name: String) -> Bool {
            var rest = Substring(name)
            while let dot = rest.firstIndex(of: ".") {
                rest = rest[rest.index(after: dot)...]
                if below.contains(String(rest)) { return true }
            }
            return false
        }
        return b.hosts.allSatisfy { hb in
            switch hb {
            case .exact(let y): return exact.contains(y) || underListedSuffix(y)
            case .subdomains(let t): return below.contains(t) || underListedSuffix(t)
            }
        }
    }
}
