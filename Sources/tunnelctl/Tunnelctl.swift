import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime

/// `tunnelctl`: the admin CLI. The command table (`CommandTable.swift`) declares every command
/// and subcommand — usage, arguments, typed options, help — and names its body (`runStatus`,
/// `runPolicyTest`, …), which lives in its group's file (`Tunnelctl+Policy.swift`, …).
///
/// Exit codes (tunnelctl(8)): 0 ok, 1 the answer is "no"/"not found", 2 usage error,
/// 3 daemon not running when needed.
@main
enum Tunnelctl {
    static func main() {
        let console = Console.standard()
        let code = run(Array(ProcessArguments.current.dropFirst()), console: console)
        console.flush()
        exit(code.rawValue)
    }

    /// Runs one invocation; tests call this with a capturing `Console`.
    ///
    /// Order: find the command word; answer `help`, `--help`, `-h` and `--version` from the table
    /// alone (no configuration, store or daemon); find the subcommand; check the options against
    /// what that (sub)command declares and convert their values; then run that entry's body.
    static func run(_ argv: [String], console: Console) -> ExitCode {
        // Options may come before the command (`tunnelctl --config PATH status`): the command is
        // the first word that is neither an option nor the value of one.
        var rest = argv
        let valueWords = commands.reduce(into: Set<String>()) { $0.formUnion($1.valueOptionWords) }
        guard let found = firstPositional(rest, valueOptions: valueWords) else {
            if rest.first(where: { $0 == "--version" || $0 == "-V" }) != nil {
                console.print("tunnelctl \(version)")
                return .ok
            }
            if asksForHelp(rest) {
                console.print(usage)
                return .ok
            }
            console.error(usage)
            return .usage
        }
        let name = found.word
        rest.remove(at: found.index)
        // `help` and `version` answer from the table alone, whatever options come with them
        // (an alias `tunnelctl --config X` must not break them).
        if name == "help" {
            if rest.contains("--man") {
                console.print(ManPage.tunnelctl, terminator: "")
                return .ok
            }
            return help(positionals(rest, valueOptions: valueWords), console)
        }
        if name == "version" {
            console.print(asksForHelp(rest) ? helpText([name]) : "tunnelctl \(version)")
            return .ok
        }
        guard let command = commands.first(where: { $0.name == name }), command.run != nil || !command.subcommands.isEmpty else {
            console.error("tunnelctl: unknown command '\(name)'\(DidYouMean.suffix(name, commands.map(\.name)))\n\n\(usage)")
            return .usage
        }
        do {
            var path = [name]
            var spec = command
            // Value options of any command are skipped, as for the command word (`--config PATH` comes
            // with every invocation, also of a group whose subcommands do not read it).
            let sub = firstPositional(rest, valueOptions: valueWords)
            if !command.subcommands.isEmpty {
                if let sub, sub.word == "help" {
                    return help([name] + positionals(Array(rest[(sub.index + 1)...]), valueOptions: valueWords), console)
                }
                if let sub, let s = command.subcommand(sub.word) {
                    path.append(s.name)
                    spec = s
                    rest.remove(at: sub.index)  // the entry is chosen: its body gets only its own words
                } else if asksForHelp(rest) {
                    console.print(helpText(path))
                    return .ok
                } else {
                    let names = command.subcommands.map(\.name)
                    guard let sub else {
                        throw CLIError.usage("missing subcommand (\(names.joined(separator: ", ")))\n\n\(usageText(path))")
                    }
                    throw CLIError.usage("unknown subcommand '\(sub.word)'\(DidYouMean.suffix(sub.word, names))\n\n\(usageText(path))")
                }
            }
            if asksForHelp(rest) {
                console.print(helpText(path))
                return .ok
            }
            if let text = ProcessInfo.processInfo.environment["TUNNELCTL_NOW"], nowOverride(text) == nil {
                throw CLIError.usage("TUNNELCTL_NOW='\(text)' is neither an ISO 8601 time with a zone "
                    + "(2026-12-02T10:00:00Z) nor Unix epoch milliseconds; fix it or unset it")
            }
            var options = try ParsedOptions(rest, spec, path: path, siblings: command.subcommands.filter { $0.name != spec.name })
            guard let body = spec.run else { preconditionFailure("'\(path.joined(separator: " "))' has no body in the command table") }
            return try body(&options, console)
        } catch let error as CLIError {
            console.error("tunnelctl \(name): \(error.message)")
            return error.code
        } catch {
            console.error("tunnelctl \(name): \(error)")
            return .failure
        }
    }

    /// `tunnelctl help [COMMAND [SUBCOMMAND]]`: exit 0, or 2 for a name the table does not know.
    static func help(_ words: [String], _ console: Console) -> ExitCode {
        guard let first = words.first else {
            console.print(usage)
            return .ok
        }
        guard let c = commands.first(where: { $0.name == first }) else {
            console.error("tunnelctl help: unknown command '\(first)'\(DidYouMean.suffix(first, commands.map(\.name)))\n\n\(usage)")
            return .usage
        }
        guard words.count > 1, !c.subcommands.isEmpty else {
            console.print(helpText([first]))
            return .ok
        }
        guard c.subcommand(words[1]) != nil else {
            let names = c.subcommands.map(\.name)
            console.error("tunnelctl help: '\(first)' has no subcommand '\(words[1])'\(DidYouMean.suffix(words[1], names)) (it has: \(names.joined(separator: ", ")))")
            return .usage
        }
        console.print(helpText([first, words[1]]))
        return .ok
    }

    /// `--name`, `--name=value` or `-x`; not `->` (FLOW syntax) nor `-5`.
    static func isOption(_ w: String) -> Bool {
        let u = Array(w.utf8)
        guard u.count >= 2, u[0] == UInt8(ascii: "-") else { return false }
        let c = u[1] == UInt8(ascii: "-") && u.count > 2 ? u[2] : u[1]
        return (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
    }
}

/// Process exit codes of tunnelctl(8).
struct ExitCode: RawRepresentable, Equatable, Sendable {
    var rawValue: Int32
    static let ok = ExitCode(rawValue: 0)
    /// The answer is "no" / "not found" (also: a check found errors).
    static let failure = ExitCode(rawValue: 1)
    static let usage = ExitCode(rawValue: 2)
    static let daemonNotRunning = ExitCode(rawValue: 3)
}

/// An error a person reads, with the exit code it maps to.
struct CLIError: Error {
    var message: String
    var code: ExitCode
    static func usage(_ m: String) -> CLIError { CLIError(message: m, code: .usage) }
    static func failure(_ m: String) -> CLIError { CLIError(message: m, code: .failure) }
}

/// Where output goes: stdout/stderr for the real binary, strings for tests.
final class Console: @unchecked Sendable {
    // Safe: a Console is used by one command invocation on one thread at a time.
    private(set) var out = ""
    private(set) var err = ""
    /// True when stdout is a terminal (live views, progress); false when piped or captured.
    let isTerminal: Bool
    private let capturing: Bool

    init(capturing: Bool, isTerminal: Bool = false) {
        self.capturing = capturing
        self.isTerminal = isTerminal
    }
    static func standard() -> Console { Console(capturing: false, isTerminal: isatty(1) == 1) }

    func print(_ s: String, terminator: String = "\n") {
        if capturing { out += s + terminator } else { Sys.writeText(1, s + terminator) }
    }
    func error(_ s: String) {
        if capturing { err += s + "\n" } else { Sys.writeText(2, s + "\n") }
    }
    func flush() {}
}
