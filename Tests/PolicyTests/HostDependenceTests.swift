import Core
import Packet
import Testing

@testable import Policy

/// `verdictDependsOnHost` against the slow reference over every order of a small rule set: a flow
/// is decided early (not pending) exactly when every possible host — none, a name matching each
/// host rule, a name matching none — gives it the same action.
@Suite struct HostDependenceTests {
    /// Host allow and block rules whose names overlap (so earlier rules shadow later ones in some
    /// orders), a port block, and a host rule with the port's action.
    static let lines = [
        "block host ads.example.com name h-block",
        "allow host *.example.com name h-allow",
        "block proto tcp port 25 name smtp",
        "reject host *.ads.example.com, tracker.net name h-reject",
        "block host mail.example.com, *.tracker.net name h-block2",
    ]

    static func permutations<T>(_ items: [T]) -> [[T]] {
        guard items.count > 1 else { return [items] }
        var out: [[T]] = []
        for (k, first) in items.enumerated() {
            var rest = items
            rest.remove(at: k)
            for p in permutations(rest) { out.append([first] + p) }
        }
        return out
    }

    /// The flows asked about: the port rule's, one it does not match, UDP, and inbound.
    static var flows: [ReferenceFlow] {
        var smtp = tcp("10.99.0.2", "192.0.2.25", 25)
        smtp.peer = "alice"
        var web = smtp
        web.destinationPort = 443
        var dns = ReferenceFlow(proto: .udp, source: IPAddress("10.99.0.2")!, destination: IPAddress("192.0.2.53")!,
                                sourcePort: 5353, destinationPort: 53)
        dns.peer = "alice"
        var inbound = smtp
        inbound.direction = .in
        return [smtp, web, dns, inbound]
    }

    @Test func everyRuleOrderDecidesEarlyExactlyWhenNoHostCanChangeTheAction() throws {
        var early = 0, waits = 0
        for order in HostDependenceTests.permutations(HostDependenceTests.lines) {
            for defaults in ["default allow\ndefault in block", "default block\ndefault in allow"] {
                let text = defaults + "\n" + order.joined(separator: "\n")
                let set = PolicyParser.parse(text)
                try #require(set.errors.isEmpty, "\(set.errors)")
                let p = CompiledPolicy(set)
                let rules = Array(p.rules)
                for f in HostDependenceTests.flows {
                    let v = p.evaluate(f.query(p))
                    let want = LinearReference.actionDependsOnHost(rules, out: p.defaultOut.action, in: p.defaultIn.action, f)
                    let got = p.verdictDependsOnHost(f.query(p), v)
                    #expect(got == want, "\(order) \(defaults.split(separator: "\n")[0]) \(f): decided early \(!got), reference \(!want)")
                    if got { waits += 1 } else { early += 1 }
                    // Decided early: the action is the host-less one whatever the host.
                    if !got {
                        for h in LinearReference.hostCandidates(rules) {
                            var g = f
                            g.host = h
                            #expect(p.evaluate(g.query(p)).action == v.action, "\(order) \(f) host \(h ?? "-")")
                        }
                    }
                }
            }
        }
        // Both answers occur often, so the enumeration tests something on each side.
        #expect(early > 300 && waits > 300, "early \(early), waits \(waits)")
    }

    /// The reported case: `block host …` early and `block proto tcp port 25` later. Port 25 is
    /// blocked whatever the host, so it is decided on its first packet, by the port rule (the one
    /// `policy test` names for the flow without `host`); port 443 still waits for its name.
    @Test func portBlockAfterHostBlockIsDecidedAtOnce() throws {
        let p = try compile("""
            default allow
            default in block
            block host *.doubleclick.net, ads.example.com name ads
            block proto tcp port 25 name no-smtp
            """)
        let smtp = tcp("10.99.0.2", "203.0.113.25", 25)
        let v = p.evaluate(smtp.query(p))
        #expect(p.rules.name(Int(v.ruleIndex)) == "no-smtp")
        #expect(!p.verdictDependsOnHost(smtp.query(p), v))
        var named = smtp
        named.host = "ads.example.com"
        #expect(p.decide(named) == "block ads")  // same action with a host, by the host rule
        let web = tcp("10.99.0.2", "203.0.113.25", 443)
        #expect(p.verdictDependsOnHost(web.query(p), p.evaluate(web.query(p))))
    }

    /// An `allow host` rule that an earlier broader block covers can never decide: not a reason
    /// to wait. The same rule first in the list is.
    @Test func shadowedHostRuleIsNotAReasonToWait() throws {
        let shadowed = try compile("""
            default allow
            default in block
            block host *.example.com name wide
            allow host mail.example.com name narrow
            block proto tcp port 25 name no-smtp
            """)
        let smtp = tcp("10.99.0.2", "203.0.113.25", 25)
        #expect(!shadowed.verdictDependsOnHost(smtp.query(shadowed), shadowed.evaluate(smtp.query(shadowed))))
        let first = try compile("""
            default allow
            default in block
            allow host mail.example.com name narrow
            block host *.example.com name wide
            block proto tcp port 25 name no-smtp
            """)
        #expect(first.verdictDependsOnHost(smtp.query(first), first.evaluate(smtp.query(first))))
    }

    /// A host rule with many patterns, the first ones covered by an earlier rule: probed up to
    /// `hostReachProbe` patterns, then taken to be reachable (the flow waits — never decided wrong).
    @Test func longListsAreProbedThenAssumedReachable() throws {
        let covered = (0..<CompiledPolicy.hostReachProbe + 5).map { "n\($0).example.com" }
        func policy(_ extra: [String]) throws -> CompiledPolicy {
            try compile("""
                default allow
                default in block
                block host *.example.com
                allow host \((covered + extra).joined(separator: ", "))
                block proto tcp port 25
                """)
        }
        let smtp = tcp("10.99.0.2", "203.0.113.25", 25)
        let all = try policy([])
        #expect(all.verdictDependsOnHost(smtp.query(all), all.evaluate(smtp.query(all))))  // conservative
        let short = try compile("""
            default allow
            default in block
            block host *.example.com
            allow host \(covered.prefix(CompiledPolicy.hostReachProbe).joined(separator: ", "))
            block proto tcp port 25
            """)
        #expect(!short.verdictDependsOnHost(smtp.query(short), short.evaluate(smtp.query(short))))
    }
}
