import Config
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Packet
import Policy
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// `tunnelctl policy check [DIR]` and `tunnelctl policy test 'FLOW'` (docs/policy.md): offline,
/// they read rule files and need no daemon. `policy reload` and `policy show` come with the daemon.
extension Tunnelctl {
    static let runPolicyCheck: Command.Body = { opts, console in
        let positional = opts.next()
        try opts.finish()
        // The default configuration when nothing else is named: the router's own, as the other
        // commands read it; --policies alone tests those rule files without one.
        let configPath = opts[.config]
            ?? (opts[.policies] == nil && Sys.statIfPresent(TunnelConfig.defaultPath) != nil ? TunnelConfig.defaultPath : nil)
        let config = try configPath.map { try cliConfig(path: $0) }
        let directory = positional ?? opts[.policies] ?? config?.interface.policyDirectory
        return try policyCheck(directory: directory ?? defaultPolicyDirectory(), config: config, json: opts[.json], console)
    }

    static let runPolicyTest: Command.Body = { opts, console in
        var words: [String] = []
        while let w = opts.next() {
            if w.hasPrefix("--") { throw CLIError.usage("unknown option '\(w)'") }
            words.append(w)
        }
        guard !words.isEmpty else { throw CLIError.usage("missing FLOW: \(PolicyFlow.syntax)") }
        // The default configuration when nothing else is named: the router's own, as the other
        // commands read it; --policies alone tests those rule files without one.
        let configPath = opts[.config]
            ?? (opts[.policies] == nil && Sys.statIfPresent(TunnelConfig.defaultPath) != nil ? TunnelConfig.defaultPath : nil)
        let config = try configPath.map { try cliConfig(path: $0) }
        return try policyTest(flowText: words.joined(separator: " "),
                              directory: opts[.policies] ?? config?.interface.policyDirectory ?? defaultPolicyDirectory(),
                              config: config, json: opts[.json], console)
    }

    /// ./policies when it exists, else /etc/tunnelvision/policies.
    static func defaultPolicyDirectory() -> String {
        if let st = Sys.statIfPresent("policies"), st.st_mode & S_IFMT == S_IFDIR { return "policies" }
        return "/etc/tunnelvision/policies"
    }

    /// The rule files of `directory`, with `gateway` bound to `config`'s tunnel addresses as
    /// tunneld binds it (unbound without a configuration: `gateway` then matches nothing).
    static func loadPolicy(_ directory: String, config: TunnelConfig?) throws -> PolicySet {
        let set: PolicySet
        do {
            set = try PolicyParser.parse(directory: directory)
        } catch let e as PolicyLoadError {
            throw CLIError.failure(e.message)
        }
        guard let config else { return set }
        return set.bindingGateway(config.interface.gatewayAddresses)
    }

    static func policyCheck(directory: String, config: TunnelConfig?, json: Bool, _ console: Console) throws -> ExitCode {
        var set = try loadPolicy(directory, config: config)
        // With a configuration: a rule naming a peer it does not configure never matches that name,
        // and a policy refusing peers their gateway's status page, resolver or ping is told.
        if let config {
            set.diagnostics += set.unknownPeerReferences(configured: config.peers.map(\.name), severity: .warning)
            if !set.hasErrors { set.diagnostics += CompiledPolicy(set).refusals(of: config.gatewayProbes) }
        }
        let hostRules = set.rules.filter { !$0.hosts.isEmpty }
        if json {
            console.print(try encodeJSON(PolicyCheckJSON(directory: directory, set: set)))
            return set.hasErrors ? .failure : .ok
        }
        for d in set.diagnostics {
            console.print(d.location.line == 0 ? "\(d.location.file): \(d.severity.rawValue): \(d.message)" : d.description)
        }
        func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }
        console.print(
            "\(directory): \(plural(set.rules.count, "rule")) in \(plural(set.files.count, "file")); "
                + "default \(set.defaultOut.action) outbound, \(set.defaultIn.action) inbound; "
                + "\(plural(set.errors.count, "error")), \(plural(set.warnings.count, "warning"))")
        if !hostRules.isEmpty {
            console.print(
                "note: \(plural(hostRules.count, "rule")) \(hostRules.count == 1 ? "matches" : "match") on 'host' (\(hostRules.map { $0.location.description }.joined(separator: ", "))); "
                    + "a flow they could decide waits up to 1 s for its TLS SNI, HTTP Host or QUIC SNI, else is known by the DNS names its peer looked up (docs/hosts.md)")
        }
        // Without a configuration a misspelt peer name is a rule that silently never matches:
        // say the names went unchecked rather than let "0 warnings" vouch for them.
        let peerNames = set.rules.reduce(into: [String]()) { names, r in names += r.peers.filter { !names.contains($0) } }
        if config == nil && !peerNames.isEmpty {
            console.print("note: peer names (\(peerNames.joined(separator: ", "))) were not checked: no configuration was given; "
                + "add --config PATH to check them against its [Peer] sections")
        }
        if config == nil && set.usesGateway {
            console.print("note: 'gateway' in the rules stands for no address, and whether peers reach the gateway's status page, "
                + "resolver and ping was not checked: no configuration was given; add --config PATH")
        }
        if set.rules.count > PolicySet.shadowCheckLimit {
            console.print("note: more than \(PolicySet.shadowCheckLimit) rules: the check for rules shadowed by earlier ones was skipped")
        }
        if set.hasErrors { console.print("the policy has errors and would not load") }
        return set.hasErrors ? .failure : .ok
    }

    static func policyTest(flowText: String, directory: String, config: TunnelConfig?, json: Bool, _ console: Console) throws -> ExitCode {
        let d = try decideFlow(flowText, config: config, directory: directory, console)
        let verdict = d.verdict, why = d.why, flow = d.flow
        if json {
            console.print(try encodeJSON(PolicyTestJSON(flow: flow, zone: cliTimeZone, directory: directory, why: why, localClock: d.localTime)))
        } else {
            console.print("flow    \(flow.description)")
            console.print("verdict \(verdict.action)")
            console.print("rule    " + why.summary)
            if let n = why.name { console.print("name    " + n) }
            if let r = why.reason { console.print("reason  " + r) }
            console.print("peer    " + d.peerText)
            console.print("tier    " + d.tierText)
            if d.timeMatters || d.atGiven { console.print("time    \(d.localTime)\(d.atGiven ? "" : " (now, local)")") }
        }
        return verdict.action == .allow ? .ok : .failure
    }
}
