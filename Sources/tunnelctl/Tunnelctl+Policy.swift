import Core
import Foundation
import Packet
import Policy

/// `tunnelctl policy check [DIR]` and `tunnelctl policy test 'FLOW'` (DESIGN.md §5, §9): offline,
/// they read rule files and need no daemon. `policy reload` and `policy show` come with the daemon.
extension Tunnelctl {
    static let policyCommand = Command(name: "policy", summary: "check rule files, test a flow against them") { args, console in
        try policy(&args, console)
    }

    static let policyUsage = """
        usage: tunnelctl policy check [DIR] [--json] [--policies DIR] [--config PATH]
               tunnelctl policy test 'FLOW' [--json] [--policies DIR] [--config PATH]
               tunnelctl policy reload [--json] [--config PATH]     (asks the running daemon)
               tunnelctl policy show [--json] [--config PATH]       (rules in force with hit counters)

        FLOW: \(PolicyFlow.syntax)
        The policy directory is DIR or --policies DIR, else ./policies if it exists, else /etc/tunnelvision/policies.
        --config PATH takes PolicyDirectory from that tunneld configuration. test exits 0 when the flow is allowed, 1 when blocked or rejected.
        """

    static func policy(_ args: inout Arguments, _ console: Console) throws -> ExitCode {
        guard let sub = args.next() else { throw CLIError.usage("missing subcommand\n\n" + policyUsage) }
        let json = args.flag("--json")
        let dirOption = try args.option("--policies")
        switch sub {
        case "check":
            let configPath = try args.option("--config")
            let positional = args.next()
            try args.finish()
            let directory = try positional ?? dirOption ?? configPath.map { try cliConfig(path: $0).interface.policyDirectory }
            return try policyCheck(directory: directory ?? defaultPolicyDirectory(), json: json, console)
        case "test":
            let configPath = try args.option("--config")
            var words: [String] = []
            while let w = args.next() {
                if w.hasPrefix("--") { throw CLIError.usage("unknown option '\(w)'") }
                words.append(w)
            }
            guard !words.isEmpty else { throw CLIError.usage("missing FLOW: \(PolicyFlow.syntax)") }
            return try policyTest(flowText: words.joined(separator: " "), directory: try dirOption ?? configPath.map { try cliConfig(path: $0).interface.policyDirectory } ?? defaultPolicyDirectory(), json: json, console)
        case "--help", "-h", "help":
            console.print(policyUsage)
            return .ok
        case "reload":
            if let dirOption { throw CLIError.usage("policy reload reads the daemon's PolicyDirectory; --policies \(dirOption) does not apply") }
            return try policyReload(&args, json: json, console)
        case "show":
            return try policyShow(&args, json: json, console)
        default:
            throw CLIError.usage("unknown subcommand '\(sub)'\(DidYouMean.suffix(sub, ["check", "test"]))\n\n" + policyUsage)
        }
    }

    /// ./policies when it exists, else /etc/tunnelvision/policies.
    static func defaultPolicyDirectory() -> String {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: "policies", isDirectory: &isDir), isDir.boolValue { return "policies" }
        return "/etc/tunnelvision/policies"
    }

    static func loadPolicy(_ directory: String) throws -> PolicySet {
        do {
            return PolicyParser.parse(try PolicySource.loadDirectory(directory))
        } catch let e as PolicyLoadError {
            throw CLIError.failure(e.message)
        }
    }

    static func policyCheck(directory: String, json: Bool, _ console: Console) throws -> ExitCode {
        var set = try loadPolicy(directory)
        if set.files.isEmpty {
            set.diagnostics.append(PolicyDiagnostic(.warning, SourceLocation(file: directory, line: 0, column: 0),
                "no *.rules files; every flow gets the built-in default (allow outbound, block inbound)"))
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
                    + "host rules are honoured by 'tunnelctl policy test' only until the data path learns host names")
        }
        if set.hasErrors { console.print("the policy has errors and would not load") }
        return set.hasErrors ? .failure : .ok
    }

    static func policyTest(flowText: String, directory: String, json: Bool, _ console: Console) throws -> ExitCode {
        let flow: PolicyFlow
        do {
            flow = try PolicyFlow(parsing: flowText)
        } catch {
            throw CLIError.usage("bad FLOW '\(flowText)': \(error.message)\n  FLOW: \(PolicyFlow.syntax)")
        }
        let set = try loadPolicy(directory)
        if set.hasErrors {
            for e in set.errors { console.error(e.description) }
            throw CLIError.failure("\(directory) has errors; fix them (tunnelctl policy check \(directory)) and test again")
        }
        let policy = CompiledPolicy(set)
        let now = Date().timeIntervalSince1970
        let nowMinute = PolicyClock.minuteOfWeek(
            epochSeconds: Int64(now), utcOffsetSeconds: TimeZone.current.secondsFromGMT())
        let query = flow.query(for: policy, minuteOfWeek: nowMinute)
        let verdict = policy.evaluate(query)
        let why = policy.explain(verdict)
        let hasWindows = set.rules.contains { $0.window != nil }
        let m = query.minuteOfWeek
        let clock = "\(TimeWindow.dayNames[m / 1440]) " + String(format: "%02d:%02d", m % 1440 / 60, m % 60)
        if json {
            console.print(try encodeJSON(PolicyTestJSON(flow: flow, zone: cliTimeZone, directory: directory, why: why, localClock: clock)))
        } else {
            console.print("flow    \(flow.description)")
            console.print("verdict \(verdict.action)")
            console.print("rule    " + why.summary)
            if let n = why.name { console.print("name    " + n) }
            if let r = why.reason { console.print("reason  " + r) }
            if hasWindows || flow.at != nil { console.print("time    \(clock)\(flow.at == nil ? " (now, local)" : "")") }
        }
        return verdict.action == .allow ? .ok : .failure
    }
}
