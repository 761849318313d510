import Control
import Core
import Foundation
import LiveFeed
import Store
import Testing
import WireGuard

@testable import tunnelctl

/// Every answer right or an error: each case is a golden transcript (`Golden/truth-*.txt`: the
/// command line, its exit code, stdout and stderr), so a wrong exit code shows in the diff as
/// plainly as a wrong word. TUNNELVISION_UPDATE_GOLDEN=1 rewrites them.
@Suite struct AnswerTruthTests {
    typealias Fixture = SessionCommandTests.Fixture
    typealias Result = (code: ExitCode, out: String, err: String)

    /// The command line a `Fixture` runs, as a transcript shows it.
    static func shown(_ f: Fixture) -> ([String]) -> [String] {
        { argv in (argv + ["--config", f.config]).map { $0.replacingOccurrences(of: f.dir, with: "TMP") } }
    }

    /// The command line a `HistoryFixture` runs, as a transcript shows it.
    static func shown(_ f: HistoryFixture) -> ([String]) -> [String] {
        { argv in (argv + ["--config", f.config]).map { $0.replacingOccurrences(of: f.dir, with: "DIR") } }
    }

    /// `$ tunnelctl ARGS`, `exit N`, then stdout and stderr.
    static func transcript(_ argv: [String], _ r: Result) -> String {
        let line = argv.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
        return "$ tunnelctl \(line)\nexit \(r.code.rawValue)\n--- stdout\n\(r.out)--- stderr\n\(r.err)"
    }

    /// Runs each command of `cases` with `run` and compares the transcripts with `golden`;
    /// `shown` is the command line as the transcript shows it (temporary paths hidden, the
    /// `--config` a fixture adds).
    static func expectTranscripts(_ cases: [[String]], _ golden: String, run: ([String]) -> Result,
                                  shown: ([String]) -> [String] = { $0 },
                                  sourceLocation: SourceLocation = #_sourceLocation) throws -> [Result] {
        let results = cases.map(run)
        let text = zip(cases, results).map { transcript(shown($0), $1) }.joined(separator: "\n")
        try HistoryFixture.expectGolden(text, golden, sourceLocation: sourceLocation)
        return results
    }

    // MARK: options given twice

    /// `--config` before the command and again after it (a shell alias plus the line): accepted,
    /// the last value counts; never "unknown option".
    @Test func anOptionGivenTwiceCountsOnceWithItsLastValue() throws {
        let f = try Fixture()
        defer { f.remove() }
        let r = try Self.expectTranscripts([
            ["--config", f.config, "policy", "test", "--config", f.config, "tcp 10.99.0.2:40000 -> 192.168.1.5:22"],
            ["flows", "--peer", "alice", "--peer", "carol"],
            ["--json", "session", "carol", "--json"],
        ], "truth-option-twice.txt", run: f.run, shown: Self.shown(f))
        #expect(r.map(\.code) == [.failure, .ok, .ok])
        #expect(r.allSatisfy { !$0.err.contains("unknown option") })
        #expect(r[1].out.contains("carol") && !r[1].out.contains("alice"), "the last --peer counts")
        // A wrong --config first, the right one last: the last is read.
        let last = f.run(["--config", "/nonexistent/tunneld.conf", "session", "carol"])
        #expect(last.code == .ok && last.out.hasPrefix("carol (free)"), "\(last.err)")
    }

    /// The rule is the option parser's, so it holds for every option of every command.
    @Test func everyDeclaredOptionMayBeGivenTwice() throws {
        for c in Tunnelctl.commands {
            for (path, spec) in [([c.name], c)] + c.subcommands.map { ([c.name, $0.name], $0) } where spec.subcommands.isEmpty {
                for o in spec.options {
                    let one = o.takesValue ? [o.name, "first"] : [o.name]
                    let two = o.takesValue ? [o.name, "second"] : [o.name]
                    let words = Array(path.dropFirst()) + one + two
                    let checked = try Tunnelctl.checkOptions(words, spec, path: path, siblings: [])
                    #expect(checked == Array(path.dropFirst()) + two, "\(path) \(o.name): \(checked)")
                }
            }
        }
    }
}
