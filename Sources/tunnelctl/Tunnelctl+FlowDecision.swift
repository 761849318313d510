import Config
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Policy
import Store

/// Which rule decides a FLOW: the one evaluation behind `policy test` and `explain 'FLOW'`, so
/// the two can never disagree. The peer and its tier come from the FLOW when it names them, else
/// from the configuration (the peer whose AllowedIPs hold the flow's peer-side address; its tier,
/// with the store's override) when there is one; what stays unknown is said as such.
struct FlowDecision {
    /// The FLOW with the peer and tier filled in where they could be.
    var flow: PolicyFlow
    /// Where the peer came from: `flow`, `config` (AllowedIPs) or `not given`.
    var peerSource: String
    /// Where the tier came from: `flow`, `config`, `store` (a `peer tier` override) or `not given`.
    var tierSource: String
    /// The tier's facts when the configuration gave it (`WindowSource`, as every view reads them).
    var tierFacts: TierFacts? = nil
    var verdict: PolicyVerdict
    var why: PolicyExplanation
    /// The local day and time the `during` windows were evaluated at (`mon 10:40`).
    var localTime: String
    /// True when the FLOW gave `at` (else: now).
    var atGiven: Bool
    /// True when any rule has a `during` window (the time then matters).
    var timeMatters: Bool
    /// True when a configuration was there to look the peer and tier up in.
    var configGiven: Bool

    /// The peer line of text output: `alice (from the configuration)`, `not given`.
    var peerText: String {
        guard let p = flow.peer else {
            return configGiven ? "not given (no configured peer's AllowedIPs hold the address)" : "not given (--config PATH looks it up)"
        }
        return peerSource == "flow" ? p : "\(p) (from the configuration: AllowedIPs)"
    }

    /// The tier line of text output.
    var tierText: String {
        guard let t = flow.tier else { return "not given" + (flow.peer == nil ? "" : " (peer not configured)") }
        switch tierSource {
        case "store": return tierFacts?.text ?? "\(t) (tunnelctl peer tier override)"
        case "config": return tierFacts?.lapsed == nil && tierFacts?.note == nil ? "\(t) (from the configuration)" : tierFacts!.text
        default: return t.name
        }
    }
}

extension Tunnelctl {
    /// Where a tunnel (so the gateway's `Address`) lives: RFC 1918, RFC 6598, RFC 4193, RFC 4291 link-local.
    static let privateRanges = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "fe80::/10"].map { IPPrefix($0)! }

    /// Parses `text` and decides it against the rule files in `directory` at "now" (`cliNow()`,
    /// in `cliTimeZone`) or the FLOW's `at`. `config` (and its store) fill in the peer and tier.
    static func decideFlow(_ text: String, config: TunnelConfig?, directory: String, _ console: Console) throws -> FlowDecision {
        var flow: PolicyFlow
        do {
            flow = try PolicyFlow(parsing: text)
        } catch {
            let hint = text.hasSuffix("-") ? " (quote the FLOW: the shell took '>' as a redirection)" : ""
            throw CLIError.usage("bad FLOW '\(text)': \(error.message)\(hint)\n  FLOW: \(PolicyFlow.syntax)")
        }
        var peerSource = flow.peer == nil ? "not given" : "flow"
        var tierSource = flow.tier == nil ? "not given" : "flow"
        var tierFacts: TierFacts?
        if let config {
            let peerSide = flow.direction == .out ? flow.source : flow.destination
            if flow.peer == nil, let p = config.peers.first(where: { p in p.allowedIPs.contains { $0.contains(peerSide) } }) {
                flow.peer = p.name
                peerSource = "config"
            }
            if flow.tier == nil, let name = flow.peer, let p = config.peer(named: name) {
                // The tier every other view shows: the running tunneld's, else the store's (a
                // shared store that cannot be read: this router's copy, said so).
                let live = livePeers(config)
                var facts: TierFacts
                do {
                    facts = try WindowSource.open(config, local: false, live: live, localOption: false).tierFacts(of: p)
                } catch {
                    facts = try WindowSource.open(config, local: true, live: live).tierFacts(of: p)
                    facts.note = "this router's copy: the shared store could not be read"
                }
                flow.tier = facts.inForce
                tierSource = facts.origin == "config" ? "config" : "store"
                tierFacts = facts
            }
        }
        let set = try loadPolicy(directory, config: config)
        if set.hasErrors {
            for e in set.errors { console.error(e.description) }
            throw CLIError.failure("\(directory) has errors; fix them (tunnelctl policy check \(directory)) and try again")
        }
        let policy = CompiledPolicy(set)
        let now = cliNow()
        let offset = cliTimeZone.secondsEastOfUTC(atMs: now)
        let query = flow.query(for: policy, minuteOfWeek: PolicyClock.minuteOfWeek(epochSeconds: now / 1000, utcOffsetSeconds: offset))
        let verdict = policy.evaluate(query)
        // Unbound, `gateway` stands for no address. The far end of the flow (its destination when
        // a peer starts it) may be the gateway's when it is a private address, as tunnel
        // addresses are: an answer that would then differ is not given (no confident wrong
        // answers); a public one is taken not to be the gateway's.
        let farEnd = flow.direction == .out ? flow.destination : flow.source
        if config == nil && set.usesGateway && Self.privateRanges.contains(where: { $0.contains(farEnd) }) {
            let bound = CompiledPolicy(set.bindingGateway([farEnd]))
            let other = bound.evaluate(flow.query(for: bound, minuteOfWeek: query.minuteOfWeek))
            if other.ruleIndex != verdict.ruleIndex {
                let rule = other.ruleIndex >= 0 ? bound.rules.location(Int(other.ruleIndex)) : policy.rules.location(Int(verdict.ruleIndex))
                throw CLIError.failure("the answer depends on whether \(farEnd) is an address of the gateway ('gateway' in \(rule)), "
                    + "and no configuration says which; add --config PATH")
            }
        }
        let m = query.minuteOfWeek
        let clock = "\(TimeWindow.dayNames[m / 1440]) " + TimeText.twoDigits(m % 1440 / 60) + ":" + TimeText.twoDigits(m % 60)
        return FlowDecision(flow: flow, peerSource: peerSource, tierSource: tierSource, tierFacts: tierFacts, verdict: verdict, why: policy.explain(verdict),
                            localTime: clock, atGiven: flow.at != nil, timeMatters: set.rules.contains { $0.window != nil },
                            configGiven: config != nil)
    }
}
