import Core
import Packet
import Testing

@testable import Policy

/// The compiled matcher's size grows with the rules, not with rules × classes (issue 18), and the
/// `during` boundaries it reports are exactly where some rule's window opens or closes.
@Suite struct CompiledMemoryTests {
    /// 20,000 disjoint /24 + port rules and 5,000 nested ones (/16s holding /24s): the stored
    /// words per rule stay a small constant (the per-class bitsets this replaced needed about
    /// rules / 32 words per class, ~1,250 words per rule here).
    @Test func sizeIsLinearInTheRules() {
        var text = "default allow\n"
        for i in 0..<20_000 {
            text += "block proto tcp to \(1 + i / 65536).\((i / 256) % 256).\(i % 256).0/24 port \(1000 + i % 500) name r\(i)\n"
        }
        for i in 0..<5_000 {
            text += i % 10 == 9 ? "block to \(100 + i / 2500).\((i / 10) % 250).0.0/16 name n\(i)\n" : "allow proto udp to \(100 + i / 2500).\((i / 10) % 250).\(i % 10).0/24 port 53 name a\(i)\n"
        }
        let set = PolicyParser.parse(text, file: "big.rules")
        #expect(set.errors.isEmpty, "\(set.errors.prefix(3))")
        let policy = CompiledPolicy(set)
        let perRule = Double(policy.storedWords) / Double(set.rules.count)
        #expect(perRule < 40, "\(policy.storedWords) words for \(set.rules.count) rules (\(perRule) per rule)")
        // And it still decides: a listed /24 on its port, the same /24 on another port, a nested one.
        let q = { (dst: String, port: UInt16, proto: IPProtocol) in
            PolicyQuery(proto: proto, source: IPAddress("10.99.0.2")!, destination: IPAddress(dst)!, sourcePort: 40000, destinationPort: port)
        }
        #expect(policy.evaluate(q("1.0.5.9", 1005, .tcp)).action == .block)
        #expect(policy.evaluate(q("1.0.5.9", 1006, .tcp)).isDefault)
        #expect(policy.evaluate(q("100.1.1.7", 53, .udp)).action == .allow)  // its /24 comes before the /16
        #expect(policy.evaluate(q("100.1.1.7", 80, .tcp)).action == .block)  // the /16
        #expect(policy.evaluate(q("100.1.9.1", 53, .udp)).action == .block)  // no /24 for .9: the /16
    }

    /// Boundaries against a minute-by-minute reference on random windows, some back to back.
    @Test func timeBoundariesMatchAReference() {
        var rng = SplitMix(state: 42)
        let week = PolicyClock.minutesPerWeek
        for round in 0..<60 {
            var gen = RuleGenerator(rng: SplitMix(state: UInt64(round)))
            let rules: [PolicyRule] = (0..<(1 + round % 6)).map { i in
                var r = PolicyRule(action: .block, location: SourceLocation(file: "t.rules", line: i + 1), text: "r\(i)")
                r.window = gen.window()
                if rng.chance(0.3) { r.destinations = [gen.prefix()] }  // anchored elsewhere: still a boundary
                return r
            }
            let policy = CompiledPolicy(rules: rules, defaultOut: PolicyDefault(action: .allow, direction: .out, location: nil, text: "default"),
                                        defaultIn: PolicyDefault(action: .block, direction: .in, location: nil, text: "default in"))
            let member = (0..<week).map { m in rules.map { r in r.window!.intervals().contains { m >= $0.0 && m < $0.1 } } }
            let want = (0..<week).filter { m in member[m] != member[(m + week - 1) % week] }
            #expect(policy.timeBoundaries == want, "round \(round): \(rules.map { $0.window! })")
        }
    }
}
