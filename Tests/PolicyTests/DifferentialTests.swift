import Core
import Packet
import Testing

@testable import Policy

/// SplitMix64: a small seeded generator so failures reproduce.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func int(_ r: ClosedRange<Int>) -> Int { Int.random(in: r, using: &self) }
}

/// Random rule sets and flows that hit edges: addresses at prefix boundaries, ports at range
/// boundaries, hosts at label boundaries, minutes at window boundaries.
struct RuleGenerator {
    var rng: SplitMix
    static let peers = ["alice", "bob", "carol", "dave"]
    static let hostNames = ["example.com", "ads.example.com", "a.b.example.com", "doubleclick.net", "x.doubleclick.net", "example.org", "com"]

    mutating func prefix() -> IPPrefix {
        if rng.chance(0.6) {
            let bases: [UInt32] = [0x0A00_0000, 0xC0A8_0100, 0, 0xFFFF_FFFF, 0xAC10_0000, UInt32.random(in: 0...UInt32.max, using: &rng)]
            let len = rng.chance(0.3) ? [0, 8, 16, 24, 32][rng.int(0...4)] : rng.int(0...32)
            let base = bases[rng.int(0...bases.count - 1)] ^ (rng.chance(0.5) ? UInt32(rng.int(0...0xFFFF)) : 0)
            return IPPrefix(IPAddress(v4: base), length: len)!
        }
        let highs: [UInt64] = [0xFD00_0000_0000_0000, 0x2001_0DB8_0000_0000, 0, ~0, rng.next()]
        let len = rng.chance(0.3) ? [0, 7, 32, 64, 127, 128][rng.int(0...5)] : rng.int(0...128)
        let a = IPAddress(v6High: highs[rng.int(0...highs.count - 1)] ^ (rng.chance(0.5) ? UInt64(rng.int(0...0xFFFF)) : 0), low: rng.chance(0.5) ? 0 : rng.next())
        return IPPrefix(a, length: len)!
    }

    mutating func portRange() -> PortRange {
        let points: [UInt16] = [0, 1, 22, 25, 53, 80, 443, 6881, 65534, 65535]
        if rng.chance(0.5) {
            let p = points[rng.int(0...points.count - 1)]
            return PortRange(p, p)
        }
        let a = UInt16(rng.int(0...2000)), b = UInt16(rng.int(0...65535))
        return rng.chance(0.7) ? PortRange(a, a + UInt16(rng.int(0...100))) : PortRange(min(a, b), max(a, b))
    }

    mutating func hostPattern() -> HostPattern {
        let name = RuleGenerator.hostNames[rng.int(0...RuleGenerator.hostNames.count - 1)]
        return rng.chance(0.5) ? .exact(name) : .subdomains(of: name)
    }

    mutating func window() -> TimeWindow {
        let start = rng.int(0...47) * 30
        var end = rng.int(1...48) * 30
        if end == start { end = (start + 60) % 1440 }
        return TimeWindow(start: start, end: end == 0 ? 1440 : end, days: UInt8(rng.int(1...127)))
    }

    mutating func rules(_ n: Int, file: String) -> [PolicyRule] {
        (0..<n).map { i in
            var r = PolicyRule(action: [.allow, .block, .reject][rng.int(0...2)], location: SourceLocation(file: file, line: i + 1), text: "rule \(i)")
            if rng.chance(0.15) { r.direction = .in }
            if rng.chance(0.2) { r.peers = Array(RuleGenerator.peers.shuffled(using: &rng).prefix(rng.int(1...2))) }
            if rng.chance(0.15) { r.tier = rng.chance(0.5) ? .free : .premium }
            if rng.chance(0.4) { r.protocols = Array([IPProtocol.tcp, .udp, .icmp, .icmpv6].shuffled(using: &rng).prefix(rng.int(1...2))) }
            if rng.chance(0.25) { r.sources = (0..<rng.int(1...2)).map { _ in prefix() } }
            if rng.chance(0.6) { r.destinations = (0..<rng.int(1...3)).map { _ in prefix() } }
            if rng.chance(0.1) { r.sourcePorts = (0..<rng.int(1...2)).map { _ in portRange() } }
            if rng.chance(0.5) { r.destinationPorts = (0..<rng.int(1...3)).map { _ in portRange() } }
            if rng.chance(0.1) { r.hosts = (0..<rng.int(1...2)).map { _ in hostPattern() } }
            if rng.chance(0.1) { r.window = window() }
            r.text = "rule \(i): \(r)"
            return r
        }
    }

    /// An address near an edge of some rule's prefix, or random.
    mutating func address(_ rules: [PolicyRule], v6: Bool) -> IPAddress {
        var found: IPPrefix? = nil
        for _ in 0..<(rules.isEmpty ? 0 : 4) where found == nil {
            let r = rules[rng.int(0...rules.count - 1)]
            found = r.destinations.first { $0.address.isIPv6 == v6 } ?? r.sources.first { $0.address.isIPv6 == v6 }
        }
        if let p = found, rng.chance(0.8) {
            let a = p.address
            let hostBits = a.bitWidth - p.length
            switch rng.int(0...3) {
            case 0: return a
            case 1, 2:  // last address, or one past it, or one before the first
                if !v6 {
                    let size: UInt64 = 1 << UInt64(hostBits)
                    let last = UInt64(a.v4) + size - 1
                    let pick = rng.int(0...2)
                    let v = pick == 0 ? last : pick == 1 ? last + 1 : UInt64(a.v4) &- 1
                    return IPAddress(v4: UInt32(truncatingIfNeeded: v))
                }
                let hiMask: UInt64 = hostBits >= 64 ? (hostBits >= 128 ? ~0 : ~0 >> UInt64(128 - hostBits)) : 0
                let loMask: UInt64 = hostBits >= 64 ? ~0 : (hostBits == 0 ? 0 : ~0 >> UInt64(64 - hostBits))
                let last = IPAddress(v6High: a.high | hiMask, low: a.low | loMask)
                if rng.chance(0.5) { return last }
                let (lo, carry) = last.low.addingReportingOverflow(1)
                return IPAddress(v6High: carry ? last.high &+ 1 : last.high, low: lo)
            default:
                if !v6 { return IPAddress(v4: a.v4 | (UInt32(truncatingIfNeeded: rng.next()) & (hostBits == 32 ? ~0 : (1 << UInt32(hostBits)) - 1))) }
                return IPAddress(v6High: a.high, low: a.low | (rng.next() & (hostBits >= 64 ? ~0 : (hostBits == 0 ? 0 : ~0 >> UInt64(64 - hostBits)))))
            }
        }
        return v6 ? IPAddress(v6High: rng.next(), low: rng.next()) : IPAddress(v4: UInt32(truncatingIfNeeded: rng.next()))
    }

    mutating func port(_ rules: [PolicyRule]) -> UInt16 {
        if !rules.isEmpty, rng.chance(0.7) {
            let r = rules[rng.int(0...rules.count - 1)]
            if let pr = (r.destinationPorts + r.sourcePorts).first {
                return [pr.lower, pr.upper, pr.lower &- 1, pr.upper &+ 1][rng.int(0...3)]
            }
        }
        return UInt16(rng.int(0...65535))
    }

    mutating func flow(_ rules: [PolicyRule], windows: [TimeWindow]) -> ReferenceFlow {
        let v6 = rng.chance(0.3)
        let protos: [IPProtocol] = [.tcp, .udp, .tcp, .udp, v6 ? .icmpv6 : .icmp, IPProtocol(rawValue: 47)]
        var f = ReferenceFlow(proto: protos[rng.int(0...protos.count - 1)], source: address(rules, v6: v6), destination: address(rules, v6: v6))
        f.direction = rng.chance(0.15) ? .in : .out
        f.sourcePort = port(rules)
        f.destinationPort = port(rules)
        f.peer = rng.chance(0.8) ? (RuleGenerator.peers + ["eve"])[rng.int(0...4)] : nil
        f.tier = [nil, .free, .premium][rng.int(0...2)]
        if rng.chance(0.5) {
            let base = RuleGenerator.hostNames[rng.int(0...RuleGenerator.hostNames.count - 1)]
            f.host = [base, "x." + base, "a.b." + base, "X" + base, base.uppercased() + "."][rng.int(0...4)]
        }
        if rng.chance(0.5), let w = windows.randomElement(using: &rng), let iv = w.intervals().randomElement(using: &rng) {
            f.minuteOfWeek = [iv.0, iv.1 - 1, iv.1 % PolicyClock.minutesPerWeek, (iv.0 + PolicyClock.minutesPerWeek - 1) % PolicyClock.minutesPerWeek][rng.int(0...3)]
        } else {
            f.minuteOfWeek = rng.int(0...PolicyClock.minutesPerWeek - 1)
        }
        return f
    }
}

@Suite struct DifferentialTests {
    /// Compiles `rules`, runs `flows` random flows through it and through the linear reference,
    /// and reports every disagreement (at most 5 per set) with the flow and both rules.
    func check(seed: UInt64, ruleCount: Int, flows: Int) -> Int {
        var gen = RuleGenerator(rng: SplitMix(state: seed))
        let rules = gen.rules(ruleCount, file: "random-\(seed).rules")
        let out: Verdict = gen.rng.chance(0.5) ? .allow : .block
        let inbound: Verdict = gen.rng.chance(0.5) ? .reject : .block
        let policy = CompiledPolicy(
            rules: rules, defaultOut: PolicyDefault(action: out, direction: .out, location: nil, text: "default"),
            defaultIn: PolicyDefault(action: inbound, direction: .in, location: nil, text: "default in"))
        var mismatches = 0
        var ruleHits = 0
        let windows = rules.compactMap(\.window)
        let hosts = LinearReference.hostCandidates(rules)
        for _ in 0..<flows {
            let f = gen.flow(rules, windows: windows)
            let v = policy.evaluate(f.query(policy))
            let (a, i) = LinearReference.evaluate(rules, out: out, in: inbound, f)
            if i >= 0 { ruleHits += 1 }
            if f.host == nil {
                // Could a host change the action? Reference: the flow under every host candidate.
                let wantPending = LinearReference.actionDependsOnHost(rules, candidates: hosts, out: out, in: inbound, f)
                if policy.verdictDependsOnHost(f.query(policy), v) != wantPending {
                    mismatches += 1
                    Issue.record("seed \(seed): verdictDependsOnHost != \(wantPending) for \(f)")
                }
            }
            if v.action != a || Int(v.ruleIndex) != i {
                mismatches += 1
                if mismatches <= 5 {
                    let got = v.ruleIndex >= 0 ? rules[Int(v.ruleIndex)].text : "default"
                    let want = i >= 0 ? rules[i].text : "default"
                    Issue.record("seed \(seed), \(ruleCount) rules: flow \(f)\n  compiled: \(v.action) by \(got)\n  reference: \(a) by \(want)")
                }
            }
        }
        return ruleHits
    }

    // 100 × 800 + 4 × 3,000 + 10,000 = 102,000 flows in all. Each test also checks that the
    // generator exercises rules, not only the defaults.

    @Test func smallSets() {
        var hits = 0
        for seed in 1...100 { hits += check(seed: UInt64(seed), ruleCount: Int(seed % 40) + 1, flows: 800) }
        #expect(hits > 80_000 / 4, "only \(hits) flows matched a rule")
    }

    @Test func thousandRuleSets() {
        var hits = 0
        for seed in 1001...1004 { hits += check(seed: UInt64(seed), ruleCount: 1_000, flows: 3_000) }
        #expect(hits > 12_000 / 2, "only \(hits) flows matched a rule")
    }

    @Test func tenThousandRuleSet() {
        let hits = check(seed: 10_000, ruleCount: 10_000, flows: 10_000)
        #expect(hits > 10_000 / 2, "only \(hits) flows matched a rule")
    }

    @Test func emptySetTakesTheDefaults() {
        #expect(check(seed: 7, ruleCount: 0, flows: 100) == 0)
    }
}
