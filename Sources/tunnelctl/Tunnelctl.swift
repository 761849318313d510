import Core
import Foundation
import Runtime

/// `tunnelctl`: the admin CLI. The command table (`CommandTable.swift`) declares every command
/// and subcommand — usage, arguments, options, help — and names its body (`runStatus`, …), which
/// lives in its own file (`Tunnelctl+Policy.swift`, …).
///
/// Exit codes (DESIGN.md §9): 0 ok, 1 the answer is "no"/"not found", 2 usage error,
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
    /// what that (sub)command declares; then run its body with the positionals first.
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
        guard let command = commands.first(where: { $0.name == name }), let body = command.run else {
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
            let checked = try checkOptions(rest, spec, path: path, siblings: command.subcommands.filter { $0.name != spec.name })
            var args = Arguments(optionsLast(checked, valueOptions: spec.valueOptionWords), readable: command.readableOptions)
            return try body(&args, console)
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

    /// The words with positionals first, in order, then the options (with their values), so that
    /// `tunnelctl --json policy --config X show` reads like `tunnelctl policy show --json --config X`.
    static func optionsLast(_ words: [String], valueOptions: Set<String>) -> [String] {
        var positionals: [String] = []
        var options: [String] = []
        var i = 0
        while i < words.count {
            let w = words[i]
            if w == "--" {
                positionals += words[(i + 1)...]
                break
            }
            if Tunnelctl.isOption(w) {
                options.append(w)
                if valueOptions.contains(w) && i + 1 < words.count {
                    options.append(words[i + 1])
                    i += 1
                }
            } else {
                positionals.append(w)
            }
            i += 1
        }
        return positionals + options
    }
}

/// Process exit codes of DESIGN.md §9.
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
        if capturing { out += s + terminator } else { FileHandle.standardOutput.write(Data((s + terminator).utf8)) }
    }
    func error(_ s: String) {
        if capturing { err += s + "\n" } else { FileHandle.standardError.write(Data((s + "\n").utf8)) }
    }
    func flush() {}
}

/// The words after the command name, consumed as options and positionals.
struct Arguments {
    private(set) var words: [String]
    /// The options the command table declares for this command (nil: no check, for tests). A
    /// body asking for another one is a table out of step with the code: it trips an assertion
    /// in debug builds (the dispatcher would never have let such an option through).
    let readable: Set<String>?
    init(_ words: [String], readable: Set<String>? = nil) {
        self.words = words
        self.readable = readable
    }

    private func declared(_ name: String) {
        assert(readable?.contains(name) ?? true, "option \(name) is read by the body but not declared in the command table")
    }

    /// The next positional word, skipping nothing; nil when none are left.
    mutating func next() -> String? { words.isEmpty ? nil : words.removeFirst() }

    /// Removes `--name` if present and says whether it was.
    mutating func flag(_ name: String) -> Bool {
        declared(name)
        guard let i = words.firstIndex(of: name) else { return false }
        words.remove(at: i)
        return true
    }

    /// Removes `--name VALUE` or `--name=VALUE` and returns VALUE.
    mutating func option(_ name: String) throws -> String? {
        declared(name)
        if let i = words.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let v = String(words[i].dropFirst(name.count + 1))
            words.remove(at: i)
            return v
        }
        guard let i = words.firstIndex(of: name) else { return nil }
        guard i + 1 < words.count else { throw CLIError.usage("\(name) needs a value") }
        let v = words[i + 1]
        words.removeSubrange(i...(i + 1))
        return v
    }

    /// Fails with a usage error naming the first unknown option or extra word, if any remain.
    func finish() throws {
        if let w = words.first {
            throw CLIError.usage(w.hasPrefix("-") ? "unknown option '\(w)'" : "unexpected argument '\(w)'")
        }
    }
}

