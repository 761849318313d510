import Core
import Foundation
import Testing

@testable import tunnelctl

/// The command table (`Sources/tunnelctl/CommandTable.swift`) as the user sees it: `--help` of
/// every command and subcommand against golden files, help without configuration, `--version`,
/// table-driven option errors, and the README's command list.
///
/// The help goldens are `Golden/help-<command>[-<subcommand>].txt` (`help-tunnelctl.txt` for the
/// top-level usage). After changing the table, regenerate them with
///     TUNNELCTL_UPDATE_GOLDEN=1 swift test --skip-build --filter CommandTableTests
/// (TUNNELVISION_UPDATE_GOLDEN=1 works too, and rewrites every golden file), review the diff,
/// then `swift build --build-tests` again: the tests read the copy in the test bundle.
@Suite struct CommandTableTests {
    static let goldenSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let golden = Bundle.module.url(forResource: "Golden", withExtension: nil)!
    static var updating: Bool {
        let env = ProcessInfo.processInfo.environment
        return env["TUNNELCTL_UPDATE_GOLDEN"] == "1" || env["TUNNELVISION_UPDATE_GOLDEN"] == "1"
    }

    func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        let console = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: console)
        return (code, console.out, console.err)
    }

    /// Every command and subcommand path of the table (`["policy", "test"]`), in table order.
    static var paths: [[String]] {
        Tunnelctl.commands.flatMap { c in [[c.name]] + c.subcommands.map { [c.name, $0.name] } }
    }

    static func goldenName(_ path: [String]) -> String { "help-" + (path.isEmpty ? "tunnelctl" : path.joined(separator: "-")) + ".txt" }

    func expectGolden(_ text: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if Self.updating {
            try text.write(to: Self.goldenSource.appendingPathComponent(name), atomically: true, encoding: .utf8)
            return
        }
        let url = Self.golden.appendingPathComponent(name)
        guard let want = try? String(contentsOf: url, encoding: .utf8) else {
            Issue.record("no golden file \(name); run with TUNNELCTL_UPDATE_GOLDEN=1 to create it", sourceLocation: sourceLocation)
            return
        }
        #expect(text == want, "golden \(name) differs:\n\(text)", sourceLocation: sourceLocation)
    }

    /// `CMD [SUB] --help` with a configuration that does not exist: exit 0, the golden text on
    /// stdout, nothing on stderr; `-h` and `help CMD [SUB]` print the same.
    @Test(arguments: paths) func helpOfEveryCommandIsGoldenAndNeedsNoConfig(_ path: [String]) throws {
        let r = run(path + ["--help", "--config", "/nonexistent/tunneld.conf"])
        #expect(r.code == .ok, "\(path): \(r.err)")
        #expect(r.err.isEmpty, "\(path): \(r.err)")
        try expectGolden(r.out, Self.goldenName(path))
        let short = run(["--config", "/nonexistent/tunneld.conf"] + path + ["-h"])
        #expect(short.code == .ok && short.out == r.out, "\(path) -h")
        if path != ["help"] {
            let viaHelp = run(["help"] + path)
            #expect(viaHelp.code == .ok && viaHelp.out == r.out, "help \(path)")
        }
    }

    @Test func topLevelUsageIsGolden() throws {
        let help = run(["help"])
        #expect(help.code == .ok && help.err.isEmpty)
        try expectGolden(help.out, Self.goldenName([]))
        #expect(run(["--help"]).out == help.out)
        #expect(run(["-h", "--config", "/nonexistent"]).out == help.out)
        let none = run([])
        #expect(none.code == .usage && none.out.isEmpty && none.err == help.out)
        // Every command of the table is listed, in table order.
        let listed = help.out.split(separator: "\n").filter { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(listed == Tunnelctl.commands.map(\.name))
    }

    /// No golden file is left over from a command the table no longer has.
    @Test func noStaleHelpGoldens() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.goldenSource.path).filter { $0.hasPrefix("help-") }
        let expected = Set(Self.paths.map(Self.goldenName) + [Self.goldenName([])])
        #expect(Set(files).subtracting(expected).isEmpty, "stale: \(Set(files).subtracting(expected).sorted())")
    }

    @Test func helpSubcommandsAndUnknownNames() {
        #expect(run(["policy", "help", "test"]).out == run(["help", "policy", "test"]).out)
        #expect(run(["audit", "help"]).out == run(["help", "audit"]).out)
        #expect(run(["audit", "strat", "--help"]).out == run(["help", "audit"]).out, "an unknown subcommand with --help shows the group")
        let unknown = run(["help", "polcy"])
        #expect(unknown.code == .usage && unknown.err.hasPrefix("tunnelctl help: unknown command 'polcy', did you mean 'policy'?"))
        let badSub = run(["help", "audit", "strat"])
        #expect(badSub.code == .usage && badSub.err.contains("did you mean 'start'?"))
        // After `--`, -h is a word, not a request for help.
        #expect(!Tunnelctl.asksForHelp(["x", "--", "-h"]) && Tunnelctl.asksForHelp(["x", "-h", "--"]))
    }

    @Test func explainHelpSaysExitOneWhenNotRefused() {
        let r = run(["explain", "--help"])
        #expect(r.out.contains("exit 1 when it is NOT refused"))
    }

    @Test func version() {
        let want = "tunnelctl \(Tunnelctl.version)\n"
        #expect(run(["--version"]).out == want && run(["--version"]).code == .ok)
        #expect(run(["version"]).out == want)
        #expect(run(["--config", "/nonexistent", "version"]).out == want)
        #expect(Tunnelctl.version.split(separator: ".").count == 3)
    }

    @Test func optionsAreCheckedAgainstTheTable() {
        let typo = run(["refusals", "--sinse", "1h", "--config", "/nonexistent"])
        #expect(typo.code == .usage)
        #expect(typo.err == """
            tunnelctl refusals: unknown option '--sinse', did you mean '--since'?
            usage: tunnelctl refusals [--since DURATION|DATE] [--peer NAME] [--gateway NAME] [--local] [--json] [--config PATH]

            """)
        let sibling = run(["capture", "off", "--detail", "full"])
        #expect(sibling.code == .usage && sibling.err.hasPrefix(
            "tunnelctl capture: unknown option '--detail' for 'capture off' (--detail does not apply here; it is an option of 'capture on')"))
        let noValue = run(["flows", "--peer"])
        #expect(noValue.code == .usage && noValue.err.hasPrefix("tunnelctl flows: --peer needs a value (--peer NAME)"))
        let flagValue = run(["flows", "--blocked=yes"])
        #expect(flagValue.code == .usage && flagValue.err.hasPrefix("tunnelctl flows: --blocked takes no value"))
        // Checked before anything is read: a usage error even with a configuration that does not exist.
        #expect(run(["status", "--jsn", "--config", "/nonexistent"]).err.contains("did you mean '--json'?"))
        // Short options and aliases are declared too.
        #expect(run(["prune", "-x"]).code == .usage)
        let missingSub = run(["capture"])
        #expect(missingSub.code == .usage && missingSub.err.hasPrefix("tunnelctl capture: missing subcommand (on, off, list, extract)"))
    }

    /// What the table declares is consistent: each argument appears in its usage line, every entry
    /// has a summary and help, option names are unique within a command.
    @Test func tableIsConsistent() {
        for path in Self.paths {
            let c = Tunnelctl.command(at: path)!
            #expect(!c.summary.isEmpty && !c.help.isEmpty, "\(path)")
            let line = Tunnelctl.usageLine(path, c)
            for a in c.arguments { #expect(line.contains(a.name), "\(path): argument \(a.name) not in '\(line)'") }
            let names = c.options.flatMap { [$0.name] + ($0.alias.map { [$0] } ?? []) }
            #expect(Set(names).count == names.count, "\(path): duplicate option")
            for n in names { #expect(Tunnelctl.isOption(n), "\(path): \(n) does not look like an option") }
            if !c.subcommands.isEmpty { #expect(c.options.isEmpty, "\(path): a group declares its options on its subcommands") }
        }
    }

    /// The README's ```tunnelctl``` block (under "## tunnelctl") lists exactly the table's
    /// commands, each group's lines name only its subcommands and all of them, and every `--option`
    /// it shows is declared.
    @Test func readmeListsExactlyTheTable() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md").standardized
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let section = text.range(of: "\n## tunnelctl\n"), let open = text.range(of: "```\n", range: section.upperBound..<text.endIndex),
              let close = text.range(of: "```", range: open.upperBound..<text.endIndex) else {
            Issue.record("README.md has no ``` block under '## tunnelctl'")
            return
        }
        let lines = text[open.upperBound..<close.lowerBound].split(separator: "\n").map(String.init)
        var byCommand: [String: [[String]]] = [:]
        for line in lines {
            let words = line.split(separator: " ").map(String.init)
            #expect(words.first == "tunnelctl" && words.count >= 2, "README line '\(line)'")
            guard words.count >= 2 else { continue }
            byCommand[words[1], default: []].append(words)
        }
        #expect(Set(byCommand.keys) == Set(Tunnelctl.commands.map(\.name)),
                "README lists \(Set(byCommand.keys).subtracting(Tunnelctl.commands.map(\.name)).sorted()) not in the table; the table has \(Set(Tunnelctl.commands.map(\.name)).subtracting(byCommand.keys).sorted()) not in the README")
        for c in Tunnelctl.commands {
            guard let readmeLines = byCommand[c.name] else { continue }
            let words = Set(readmeLines.flatMap { $0.flatMap { $0.split(separator: "|").map(String.init) } })
            if !c.subcommands.isEmpty {
                for s in c.subcommands { #expect(words.contains(s.name), "README does not show '\(c.name) \(s.name)'") }
                for l in readmeLines where l.count > 2 {
                    #expect(c.subcommand(l[2]) != nil, "README shows '\(c.name) \(l[2])', which the table does not have")
                }
            }
            let declared = c.readableOptions.union(["--help", "--version"])  // understood by every command
            for w in words {
                let name = String(w.drop(while: { "[(".contains($0) }).prefix(while: { !"])=,".contains($0) }))
                guard name.hasPrefix("--") else { continue }
                #expect(declared.contains(name), "README shows \(name) for '\(c.name)', which the table does not declare")
            }
        }
    }
}
