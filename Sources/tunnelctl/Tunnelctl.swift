import Core
import Foundation

/// `tunnelctl`: the admin CLI. Each command group lives in its own file
/// (`Tunnelctl+Policy.swift`, …) as a `static func` registered in `commands` below.
///
/// Exit codes (DESIGN.md §9): 0 ok, 1 the answer is "no"/"not found", 2 usage error,
/// 3 daemon not running when needed.
@main
enum Tunnelctl {
    /// A command group: its name, a one-line summary for `--help`, and its handler.
    struct Command: Sendable {
        let name: String
        let summary: String
        let run: @Sendable (inout Arguments, Console) throws -> ExitCode
    }

    /// Every command group, in the order `tunnelctl --help` lists them.
    static let commands: [Command] = [
        // Command groups register here, one line each.
        statusCommand,
        peersCommand,
        policyCommand,
        kickCommand,
        sessionCommand,
        explainCommand,
        refusalsCommand,
        flowsCommand,
        peerCommand,
        timelineCommand,
        auditCommand,
        retentionCommand,
        pruneCommand,
        watchCommand,
        captureCommand,
    ]

    static func main() {
        let console = Console.standard()
        let code = run(Array(CommandLine.arguments.dropFirst()), console: console)
        console.flush()
        exit(code.rawValue)
    }

    /// Runs one invocation; tests call this with a capturing `Console`.
    static func run(_ argv: [String], console: Console) -> ExitCode {
        // Options may come before the command (`tunnelctl --config PATH status`): the command is
        // the first word that is neither an option nor the value of one.
        var rest = argv
        var commandIndex: Int? = nil
        var i = 0
        while i < rest.count {
            if rest[i] == "--config" { i += 2; continue }
            if isOption(rest[i]) && rest[i] != "-h" && rest[i] != "--help" { i += 1; continue }
            commandIndex = i
            break
        }
        let first = commandIndex.map { rest.remove(at: $0) }
        var args = Arguments(optionsLast(rest))
        guard let name = first else {
            console.error(usage)
            return .usage
        }
        if name == "--help" || name == "-h" || name == "help" {
            console.print(usage)
            return .ok
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            console.error("tunnelctl: unknown command '\(name)'\(DidYouMean.suffix(name, commands.map(\.name)))\n\n\(usage)")
            return .usage
        }
        do {
            return try command.run(&args, console)
        } catch let error as CLIError {
            console.error("tunnelctl \(name): \(error.message)")
            return error.code
        } catch {
            console.error("tunnelctl \(name): \(error)")
            return .failure
        }
    }

    /// Options that take a value (`--since 1h`); every other `-…` word is a flag.
    static let valueOptions: Set<String> = ["--config", "--policies", "--since", "--peer", "--detail", "--flow", "--filter", "-o", "--count", "--ring"]

    /// `--name`, `--name=value` or `-x`; not `->` (FLOW syntax) nor `-5`.
    static func isOption(_ w: String) -> Bool {
        let u = Array(w.utf8)
        guard u.count >= 2, u[0] == UInt8(ascii: "-") else { return false }
        let c = u[1] == UInt8(ascii: "-") && u.count > 2 ? u[2] : u[1]
        return (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
    }

    /// The words with positionals first, in order, then the options (with their values), so that
    /// `tunnelctl --json policy --config X show` reads like `tunnelctl policy show --json --config X`.
    static func optionsLast(_ words: [String]) -> [String] {
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

    static var usage: String {
        var s = "usage: tunnelctl COMMAND [options]   (every read command takes --json and --config PATH)\n\ncommands:\n"
        for c in commands { s += "  " + c.name.padding(toLength: 12, withPad: " ", startingAt: 0) + c.summary + "\n" }
        return s
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

    func print(_ s: String) {
        if capturing { out += s + "\n" } else { FileHandle.standardOutput.write(Data((s + "\n").utf8)) }
    }
    func error(_ s: String) {
        if capturing { err += s + "\n" } else { FileHandle.standardError.write(Data((s + "\n").utf8)) }
    }
    func flush() {}
}

/// The words after the command name, consumed as options and positionals.
struct Arguments {
    private(set) var words: [String]
    init(_ words: [String]) { self.words = words }

    /// The next positional word, skipping nothing; nil when none are left.
    mutating func next() -> String? { words.isEmpty ? nil : words.removeFirst() }

    /// Removes `--name` if present and says whether it was.
    mutating func flag(_ name: String) -> Bool {
        guard let i = words.firstIndex(of: name) else { return false }
        words.remove(at: i)
        return true
    }

    /// Removes `--name VALUE` or `--name=VALUE` and returns VALUE.
    mutating func option(_ name: String) throws -> String? {
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

