import Core
import Testing

@testable import tunnelctl

/// The option parser: words checked against a table entry (`checkOptions`), then converted to
/// each option's kind (`ParsedOptions`) before the body runs.
@Suite struct ParsedOptionsTests {
    static func parse(_ path: [String], _ words: [String], now: Int64 = 10_000_000_000) throws -> ParsedOptions {
        try ParsedOptions(words, Tunnelctl.command(at: path)!, path: path, now: { now })
    }

    static func usageError(_ path: [String], _ words: [String]) -> String? {
        do {
            _ = try parse(path, words)
            return nil
        } catch let e as CLIError {
            return e.code == .usage ? e.message : "exit \(e.code.rawValue): \(e.message)"
        } catch {
            return "\(error)"
        }
    }

    static func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        let console = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: console)
        return (code, console.out, console.err)
    }

    @Test func valuesComeTyped() throws {
        let w = try Self.parse(["watch"], ["--count", "3", "--timeout=2s", "--peer", "alice", "--json", "--config", "/x.conf"])
        #expect(w[.count] == 3 && w[.timeout] == 2_000 && w[.peer] == "alice" && w[.config] == "/x.conf")
        #expect(w[.json] && !w[.blocked] && w[.ring] == nil)
        let f = try Self.parse(["flows"], ["--since", "1h", "--blocked"], now: 10_000_000_000)
        #expect(f[.since] == 10_000_000_000 - 3_600_000 && f[.blocked])
        #expect(try Self.parse(["flows"], ["--since", "forever"])[.since] == Int64.min)
        let x = try Self.parse(["capture", "extract"], ["--flow", "42", "-o", "out.pcap"])
        #expect(x[.flow] == 42 && x[.output] == "out.pcap" && x[.filter] == nil)
        #expect(try Self.parse(["capture", "on"], ["--detail", "full"])[.detail] == "full")
        let p = try Self.parse(["prune"], ["-n"])
        #expect(p[.dryRun], "an alias reads as its option")
    }

    @Test func positionalsStayInOrderAroundOptions() throws {
        var o = try Self.parse(["explain"], ["tcp", "--json", "10.0.0.1:1", "--", "--x"])
        #expect(o.positionals == ["tcp", "10.0.0.1:1", "--x"] && o[.json])
        #expect(o.next() == "tcp" && o.peek == "10.0.0.1:1")
        _ = o.next()
        #expect(throws: CLIError.self) { try o.finish() }
        _ = o.next()
        try o.finish()
    }

    @Test func anUnknownOptionIsOneUsageError() {
        #expect(Self.usageError(["watch"], ["--cont", "3"])?.hasPrefix("unknown option '--cont', did you mean '--count'?\nusage: tunnelctl watch") == true)
        #expect(Self.usageError(["audit", "list"], ["--detail", "x"])?.hasPrefix("unknown option '--detail' for 'audit list'") == true)
        let r = Self.run(["watch", "--cont", "3", "--config", "/nonexistent"])
        #expect(r.code == .usage && r.err.hasPrefix("tunnelctl watch: unknown option '--cont', did you mean '--count'?"), "\(r.err)")
    }

    @Test func aMissingValueIsOneUsageError() {
        #expect(Self.usageError(["watch"], ["--count"])?.hasPrefix("--count needs a value (--count N)") == true)
        #expect(Self.usageError(["capture", "extract"], ["-o", "x.pcap"]) == "capture extract needs --flow ID (a number; tunnelctl watch and flows show ids)")
        #expect(Self.usageError(["capture", "extract"], ["--flow", "7"]) == "capture extract needs -o FILE")
    }

    /// A value of the wrong kind is refused before the body runs: before the configuration is
    /// read, with the same sentence for every command that takes the option.
    @Test func aValueOfTheWrongKindIsOneUsageError() {
        #expect(Self.usageError(["watch"], ["--count", "0"]) == "--count needs a positive number, not '0'")
        #expect(Self.usageError(["watch"], ["--count", "x"]) == "--count needs a positive number, not 'x'")
        #expect(Self.usageError(["watch"], ["--timeout", "soon"]) == "--timeout needs a duration (500ms, 10s, 2m), not 'soon'")
        #expect(Self.usageError(["capture", "extract"], ["--flow", "abc", "-o", "x"]) == "capture extract needs --flow ID (a number; tunnelctl watch and flows show ids)")
        #expect(Self.usageError(["capture", "on"], ["--detail", "half"]) == "--detail must be metadata or full, not 'half'")
        for path in [["flows"], ["refusals"], ["timeline"], ["audit", "list"]] {
            #expect(Self.usageError(path, ["--since", "yesterday"])?.hasPrefix("--since ") == true, "\(path)")
        }
        let r = Self.run(["capture", "on", "--detail", "half", "--config", "/nonexistent/tunneld.conf"])
        #expect(r.code == .usage && r.err == "tunnelctl capture: --detail must be metadata or full, not 'half'\n", "\(r.err)")
    }

    /// As `checkOptions` keeps only the last of a repeated option, the last value is the one
    /// converted and read.
    @Test func anOptionGivenTwiceHasItsLastValue() throws {
        let w = try Self.parse(["watch"], ["--count", "1", "--peer", "a", "--count", "5", "--peer=b"])
        #expect(w[.count] == 5 && w[.peer] == "b")
        #expect(try Self.parse(["flows"], ["--json", "--json"])[.json])
        // Only the kept value is converted: a bad first one does not count.
        #expect(try Self.parse(["watch"], ["--count", "x", "--count", "2"])[.count] == 2)
    }
}
