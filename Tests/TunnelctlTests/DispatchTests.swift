import Core
import Testing
@testable import tunnelctl

@Suite struct DispatchTests {
    @Test func unknownCommandIsAUsageError() {
        let console = Console(capturing: true)
        #expect(Tunnelctl.run(["frobnicate"], console: console) == .usage)
        #expect(console.err.hasPrefix("tunnelctl: unknown command 'frobnicate'"))
    }

    @Test func noCommandIsAUsageError() {
        let console = Console(capturing: true)
        #expect(Tunnelctl.run([], console: console) == .usage)
        #expect(console.err.contains("usage: tunnelctl COMMAND"))
    }

    @Test func didYouMean() {
        #expect(DidYouMean.suffix("polcy", ["policy", "peers"]) == ", did you mean 'policy'?")
        #expect(DidYouMean.suffix("zzzzzz", ["policy"]) == "")
    }

    /// Every command runs its own table entry's body: a group has none (no switch on subcommand
    /// words), each of its subcommands has one; only `help` and `version` are the dispatcher's.
    @Test func everyEntryRunsItsOwnBody() {
        for c in Tunnelctl.commands {
            if c.subcommands.isEmpty {
                #expect((c.run == nil) == ["help", "version"].contains(c.name), "\(c.name)")
            } else {
                #expect(c.run == nil, "the group \(c.name) has a body")
                for s in c.subcommands { #expect(s.run != nil && s.subcommands.isEmpty, "\(c.name) \(s.name) has no body") }
            }
        }
    }
}
