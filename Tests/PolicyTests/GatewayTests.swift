import Core
import Foundation
import Packet
import Testing

@testable import Policy

/// `from gateway` / `to gateway`: the gateway's own tunnel addresses, bound from the
/// configuration when the policy is compiled (`PolicySet.bindingGateway`).
@Suite struct GatewayTests {
    static let v4 = IPAddress("10.99.0.1")!
    static let v6 = IPAddress("fd99::1")!

    func bound(_ text: String, _ gateway: [IPAddress] = [v4, v6]) throws -> (PolicySet, CompiledPolicy) {
        let set = PolicyParser.parse(text)
        try #require(set.errors.isEmpty, "\(set.errors)")
        let b = set.bindingGateway(gateway)
        return (b, CompiledPolicy(b))
    }

    @Test func parsesTheWordInFromAndToLists() throws {
        let set = PolicyParser.parse("""
            allow proto udp to gateway port 53 name dns
            allow to gateway, 192.168.1.1 port 22 name mixed
            allow in from gateway name back
            block to 10.0.0.0/8
            """)
        #expect(set.errors.isEmpty, "\(set.errors)")
        let r = Array(set.rules)
        #expect(r[0].destinationGateway && r[0].destinations.isEmpty && !r[0].sourceGateway)
        #expect(r[1].destinationGateway && r[1].destinations.map(\.description) == ["192.168.1.1/32"])
        #expect(r[2].sourceGateway && r[2].sources.isEmpty && r[2].direction == .in)
        #expect(!r[3].destinationGateway && !r[3].sourceGateway)
        #expect(set.usesGateway && set.gateway == nil)
        #expect(!PolicyParser.parse("block to 10.0.0.0/8").usesGateway)
        // A misspelling is an error with a hint; the word is no keyword elsewhere.
        let typo = PolicyParser.parse("allow to gatway port 53")
        #expect(typo.errors.map(\.description) == ["test.rules:1:10: error: 'gatway' is not an IPv4 or IPv6 address, a CIDR block or 'gateway', did you mean 'gateway'?"])
        #expect(PolicyParser.parse("allow gateway").hasErrors)
        #expect(PolicyParser.parse("allow peer gateway").errors.isEmpty, "a peer may be called gateway")
    }

    @Test func boundToV4AndV6HostAddressesTextKept() throws {
        let (set, p) = try bound("""
            default block
            default in block
            allow proto udp,tcp to gateway port 53 name dns
            allow proto icmp,icmpv6 to gateway name ping
            block to gateway name other
            allow to 10.0.0.0/8 name lan
            """)
        #expect(set.gateway == [Self.v4, Self.v6])
        let dns = set.rules[0]
        #expect(dns.text == "allow proto udp,tcp to gateway port 53 name dns", "the rule reads as written")
        #expect(dns.destinations.map(\.description) == ["10.99.0.1/32", "fd99::1/128"])
        #expect(dns.destinationGateway)
        let gw = [Self.v4, Self.v6]
        func decide(_ f: ReferenceFlow) -> String {
            let v = p.evaluate(f.query(p))
            let (a, i) = LinearReference.evaluate(Array(PolicyParser.parse(set.rules.map(\.text).joined(separator: "\n")).rules),
                                                  out: .block, in: .block, f, gateway: gw)
            #expect(v.action == a && Int(v.ruleIndex) == i, "compiled \(v), reference \(a) \(i): \(f)")
            return "\(v.action) " + (v.isDefault ? "default" : set.rules[Int(v.ruleIndex)].name ?? "?")
        }
        #expect(decide(ReferenceFlow(proto: .udp, source: IPAddress("10.99.0.2")!, destination: Self.v4, sourcePort: 5000, destinationPort: 53)) == "allow dns")
        #expect(decide(ReferenceFlow(proto: .udp, source: IPAddress("fd99::2")!, destination: Self.v6, sourcePort: 5000, destinationPort: 53)) == "allow dns")
        #expect(decide(ReferenceFlow(proto: .icmp, source: IPAddress("10.99.0.2")!, destination: Self.v4)) == "allow ping")
        #expect(decide(ReferenceFlow(proto: .icmpv6, source: IPAddress("fd99::2")!, destination: Self.v6)) == "allow ping")
        #expect(decide(tcp("10.99.0.2", "10.99.0.1", 22)) == "block other")
        #expect(decide(tcp("10.99.0.2", "10.99.0.3", 53)) == "allow lan", "another address of the subnet is not the gateway")
        #expect(decide(tcp("fd99::2", "fd99::3", 22)) == "block default")
        // explain keeps the word.
        let v = p.evaluate(tcp("10.99.0.2", "10.99.0.1", 22).query(p))
        #expect(p.explain(v).text == "block to gateway name other")
    }

    @Test func unboundMatchesNoAddressNeverAny() throws {
        let set = PolicyParser.parse("default allow\nblock to gateway name g\nblock in from gateway name h")
        let p = CompiledPolicy(set)
        for dst in ["10.99.0.1", "8.8.8.8", "fd99::1"] {
            let v = p.evaluate(tcp(dst.contains(":") ? "fd99::2" : "10.99.0.2", dst, 80).query(p))
            #expect(v.isDefault && v.action == .allow, "unbound gateway matched \(dst)")
        }
        // Bound to nothing (an interface without addresses): the same.
        let (_, none) = try bound("default allow\nblock to gateway", [])
        #expect(none.evaluate(tcp("10.99.0.2", "10.99.0.1", 80).query(none)).isDefault)
    }

    @Test func analysisKnowsTheWordIsNoAddressItKnows() {
        func warnings(_ text: String) -> [String] { PolicyParser.parse("default allow\ndefault in block\n" + text).warnings.map(\.message) }
        // `to gateway` is neither "any destination" nor covered by a written prefix.
        #expect(warnings("allow to gateway port 53\nblock to 10.0.0.0/8 port 53").isEmpty)
        #expect(warnings("block to 10.0.0.0/8\nallow to gateway port 53").isEmpty)
        #expect(warnings("allow to gateway from fd00::/8").isEmpty, "gateway may have either family")
        // But `to gateway` covers a later `to gateway` with narrower fields.
        #expect(warnings("block to gateway\nallow proto tcp to gateway port 22").contains { $0.contains("rule never decides anything") })
        #expect(warnings("block\nallow to gateway").contains { $0.contains("rule never decides anything") })
    }

    /// Random rule sets with `gateway` in their lists against the linear reference, bound to v4
    /// and v6 addresses (some inside the rules' prefixes), and unbound.
    @Test func differentialWithGateway() {
        var mismatches = 0
        for seed in UInt64(1)...60 {
            var gen = RuleGenerator(rng: SplitMix(state: seed &* 7919))
            var rules = gen.rules(Int(seed % 30) + 1, file: "gw-\(seed).rules")
            for i in rules.indices {
                if gen.rng.chance(0.3) { rules[i].destinationGateway = true }
                if gen.rng.chance(0.15) { rules[i].sourceGateway = true }
                if rules[i].destinationGateway && gen.rng.chance(0.5) { rules[i].destinations = [] }
            }
            let gateways: [[IPAddress]] = [[], [IPAddress("10.0.0.1")!], [IPAddress("10.99.0.1")!, IPAddress("fd00::1")!],
                                           [gen.address(rules, v6: false), gen.address(rules, v6: true)]]
            for gateway in gateways {
                let set = PolicySet(rules: PolicyRules(rules),
                                    defaultOut: PolicyDefault(action: .allow, direction: .out, location: nil, text: "default"),
                                    defaultIn: PolicyDefault(action: .block, direction: .in, location: nil, text: "default in"),
                                    diagnostics: [], files: [])
                let p = CompiledPolicy(gateway.isEmpty && seed % 2 == 0 ? set : set.bindingGateway(gateway))
                for k in 0..<300 {
                    var f = gen.flow(rules, windows: rules.compactMap(\.window))
                    let same = gateway.filter { $0.isIPv6 == f.destination.isIPv6 }
                    if !same.isEmpty, k % 3 == 0 { f.destination = same[k % same.count] }
                    if !same.isEmpty, k % 5 == 0, f.source.isIPv6 == f.destination.isIPv6 { f.source = same[0] }
                    let v = p.evaluate(f.query(p))
                    let (a, i) = LinearReference.evaluate(rules, out: .allow, in: .block, f, gateway: gateway)
                    if v.action != a || Int(v.ruleIndex) != i {
                        mismatches += 1
                        if mismatches <= 5 { Issue.record("seed \(seed) gateway \(gateway): \(f): compiled \(v.ruleIndex), reference \(i)") }
                    }
                }
            }
        }
        #expect(mismatches == 0)
    }

    /// Binding keeps what the rules are: names, reasons, places and texts, in order.
    @Test func bindingKeepsEverythingElse() throws {
        let text = "default allow\nblock peer a, b tier free proto tcp from gateway to gateway, 10.0.0.0/8 sport 1-2 port 3 host x.example during 10:00-11:00 mon name n reason \"r\"\nallow to 8.8.8.8 name other"
        let set = PolicyParser.parse(text)
        let b = set.bindingGateway([Self.v4])
        #expect(b.rules.count == set.rules.count)
        for (x, y) in zip(set.rules, b.rules) {
            #expect(x.text == y.text && x.name == y.name && x.reason == y.reason && x.location == y.location && x.peers == y.peers)
            #expect(x.hosts == y.hosts && x.window == y.window && x.tier == y.tier && x.sourcePorts == y.sourcePorts)
        }
        #expect(b.rules[0].sources.map(\.description) == ["10.99.0.1/32"])
        #expect(b.rules[0].destinations.map(\.description) == ["10.0.0.0/8", "10.99.0.1/32"])
        #expect(b.rules[1].destinations.map(\.description) == ["8.8.8.8/32"])
    }

    /// The flows peers need to the gateway, judged: refused ones are one warning per service and
    /// rule, at the rule, naming the peers and a rule that would allow it.
    @Test func refusedGatewayServicesAreWarnedAtTheRule() throws {
        func probe(_ service: String, _ proto: IPProtocol, _ dst: IPAddress, _ port: UInt16, _ peer: String?, _ tier: PeerTier = .free) -> GatewayProbe {
            GatewayProbe(service: service, symptom: "it times out", allowRule: "allow \(service)", proto: proto,
                         source: dst.isIPv6 ? IPAddress("fd99::2")! : IPAddress("10.99.0.2")!, destination: dst, port: port, peer: peer, tier: tier)
        }
        let probes = [
            probe("dns", .udp, Self.v4, 53, nil), probe("dns", .tcp, Self.v4, 53, nil), probe("dns", .udp, Self.v4, 53, "alice"),
            probe("status", .tcp, Self.v4, 80, nil), probe("ping", .icmpv6, Self.v6, 0, "bob", .premium),
        ]
        // The old example policy: the private block covers the gateway's own addresses.
        let (_, old) = try bound("""
            default allow
            default in block
            block to 10.0.0.0/8, 192.168.0.0/16 name private-v4
            block to fc00::/7 name private-v6
            """)
        let w = old.refusals(of: probes)
        #expect(w.map(\.location.line) == [3, 3, 4])
        #expect(w.allSatisfy { $0.severity == .warning })
        #expect(w[0].message == "this rule (block to 10.0.0.0/8, 192.168.0.0/16 name private-v4) blocks dns for alice, a new peer (tier free): it times out; to allow it, put 'allow dns' before it")
        #expect(w[2].message.contains("ping for bob"))
        // The default set's way: allowed before the block, so nothing to say.
        let (_, fixed) = try bound("""
            default allow
            default in block
            allow proto udp,tcp to gateway port 53
            allow proto tcp to gateway port 80
            allow proto icmp,icmpv6 to gateway
            block to gateway
            block to 10.0.0.0/8, fc00::/7
            """)
        #expect(fixed.refusals(of: probes).isEmpty)
        // A default that blocks, a tier rule, a time window: each is named.
        let (_, strict) = try bound("default block\ndefault in block\nallow tier premium\n")
        let s = strict.refusals(of: probes)
        #expect(s.count == 2 && s[0].message.hasPrefix("the default (default block) blocks dns for alice, a new peer (tier free)"), "\(s)")
        #expect(s[0].location.line == 1)
        let (_, night) = try bound("default allow\nreject proto udp port 53 during 22:00-06:00 name night\n")
        let n = night.refusals(of: probes)
        #expect(n.count == 1 && n[0].message.contains(", during 22:00-06:00, rejects dns"), "\(n)")
    }
}
