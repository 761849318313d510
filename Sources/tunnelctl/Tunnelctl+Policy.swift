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
            throw CLIError.usage("unknown subcommand '\(sub)'\(didYouMean(sub, ["check", "test"]))\n\n" + policyUsage)
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
            return try PolicyParser.parse(directory: directory)
        } catch let e as PolicyLoadError {
            throw CLIError.failure(e.message)
        }
    }

    static func policyCheck(directory: String, json: Bool, _ console: Console) throws -> ExitCode {
        let set = try loadPolicy(directory)
        let hostRules = set.rules.filter { !$0.hosts.isEmpty }
        let duringRules = set.rules.filter { $0.window != nil }
        if json {
            let report = PolicyCheckReport(
                directory: directory, files: set.files, rules: set.rules.count,
                defaults: .init(out: set.defaultOut.action.description, in: set.defaultIn.action.description),
                errors: set.errors.map(PolicyCheckReport.Diagnostic.init), warnings: set.warnings.map(PolicyCheckReport.Diagnostic.init),
                hostRules: hostRules.map { $0.location.description }, duringRules: duringRules.map { $0.location.description },
                ok: !set.hasErrors)
            console.print(try encodeJSON(report))
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
            let report = PolicyTestReport(
                flow: flow.description, directory: directory, action: verdict.action.description, allowed: verdict.action == .allow,
                isDefault: why.isDefault, file: why.location?.file, line: why.location?.line, text: why.text, name: why.name,
                reason: why.reason, at: flow.at, localTime: clock)
            console.print(try encodeJSON(report))
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

    static func encodeJSON<T: Encodable>(_ value: T) throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try e.encode(value), as: UTF8.self)
    }
}

/// `policy check --json` (fields documented in docs/policy.md).
struct PolicyCheckReport: Encodable {
    struct Defaults: Encodable {
        var out: String
        var `in`: String
    }
    struct Diagnostic: Encodable {
        var file: String
        var line: Int
        var column: Int
        var message: String
        init(_ d: PolicyDiagnostic) {
            file = d.location.file
            line = d.location.line
            column = d.location.column
            message = d.message
        }
    }
    var directory: String
    var files: [String]
    var rules: Int
    var defaults: Defaults
    var errors: [Diagnostic]
    var warnings: [Diagnostic]
    var hostRules: [String]
    var duringRules: [String]
    var ok: Bool
}

/// `policy test --json` (fields documented in docs/policy.md).
struct PolicyTestReport: Encodable {
    var flow: String
    var directory: String
    var action: String
    var allowed: Bool
    var isDefault: Bool
    var file: String?
    var line: Int?
    var text: String
    var name: String?
    var reason: String?
    var at: String?
    var localTime: String

    enum CodingKeys: String, CodingKey {
        case flow, directory, action, allowed, isDefault = "default", file, line, text, name, reason, at, localTime
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(flow, forKey: .flow)
        try c.encode(directory, forKey: .directory)
        try c.encode(action, forKey: .action)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(isDefault, forKey: .isDefault)
        try c.encode(file, forKey: .file)  // null for a built-in default
        try c.encode(line, forKey: .line)
        try c.encode(text, forKey: .text)
        try c.encode(name, forKey: .name)
        try c.encode(reason, forKey: .reason)
        try c.encode(at, forKey: .at)
        try c.encode(localTime, forKey: .localTime)
    }
}
