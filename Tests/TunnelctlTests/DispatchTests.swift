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

    @Test func optionsAndFlags() throws {
        var a = Arguments(["--json", "x", "--since=1h", "--peer", "alice"])
        let json = a.flag("--json")
        let since = try a.option("--since")
        let peer = try a.option("--peer")
        let word = a.next()
        #expect(json && since == "1h" && peer == "alice" && word == "x")
        try a.finish()
        var b = Arguments(["--peer"])
        var threw = false
        do { _ = try b.option("--peer") } catch is CLIError { threw = true }
        #expect(threw)
        #expect(DidYouMean.suffix("polcy", ["policy", "peers"]) == ", did you mean 'policy'?")
        #expect(DidYouMean.suffix("zzzzzz", ["policy"]) == "")
    }
}
