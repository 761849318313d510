import Config
import Core
import Foundation
import Policy
import Store
import Testing

@testable import tunnelctl

/// The files generated from the command table — `man/tunnelctl.8`, `completion/tunnelctl.bash`,
/// `completion/_tunnelctl` — are exactly what the table gives today, and the hand-written pages
/// cover what the code parses (every config key, every rule keyword). Regenerate the generated
/// files with `scripts/gen-docs.sh` (or `TUNNELCTL_UPDATE_GOLDEN=1 swift test --skip-build
/// --filter GeneratedDocsTests`). Rendering and the shells' own checks are in scripts/tests/.
@Suite struct GeneratedDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        let console = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: console)
        return (code, console.out, console.err)
    }

    func checkedIn(_ relative: String, equals generated: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let url = Self.root.appendingPathComponent(relative)
        if CommandTableTests.updating {
            try generated.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        let want = try String(contentsOf: url, encoding: .utf8)
        #expect(generated == want, "\(relative) is not what the command table generates: run scripts/gen-docs.sh", sourceLocation: sourceLocation)
    }

    func page(_ relative: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(relative), encoding: .utf8)
    }

    @Test func checkedInFilesAreGenerated() throws {
        let man = run(["help", "--man"])
        #expect(man.code == .ok && man.err.isEmpty)
        #expect(man.out == ManPage.tunnelctl)
        try checkedIn("man/tunnelctl.8", equals: man.out)
        let bash = run(["completion", "bash"])
        #expect(bash.code == .ok && bash.out == CompletionScript.bash())
        try checkedIn("completion/tunnelctl.bash", equals: bash.out)
        let zsh = run(["completion", "zsh"])
        #expect(zsh.code == .ok && zsh.out == CompletionScript.zsh())
        try checkedIn("completion/_tunnelctl", equals: zsh.out)
        #expect(run(["completion", "fish"]).code == .usage)
        #expect(run(["completion"]).code == .usage)
    }

    /// Every command, subcommand and option of the table is in the page and in both scripts.
    @Test func everyCommandAndOptionIsDocumentedAndCompleted() {
        let man = ManPage.tunnelctl, bash = CompletionScript.bash(), zsh = CompletionScript.zsh()
        for c in Tunnelctl.commands {
            #expect(man.contains(".SS \"tunnelctl \(ManPage.escape(c.name))"), "man: \(c.name)")
            #expect(bash.contains(c.name) && zsh.contains("'\(c.name):"), "completion: \(c.name)")
            for s in c.subcommands {
                #expect(man.contains(".SS \"tunnelctl \(ManPage.escape(c.name + " " + s.name))\""), "man: \(c.name) \(s.name)")
                #expect(zsh.contains("'\(s.name):"), "zsh: \(c.name) \(s.name)")
            }
        }
        for leaf in CompletionScript.leaves {
            let line = bash.split(separator: "\n").first { $0.hasPrefix("            '\(leaf.key)') w=") }
            #expect(line != nil, "bash: no options line for \(leaf.key)")
            for o in leaf.command.options {
                #expect(man.contains(ManPage.escape(o.listText)), "man: \(leaf.key) \(o.name)")
                #expect(line?.contains(o.name) == true, "bash: \(leaf.key) \(o.name)")
                #expect(zsh.contains("'\(o.name):\(o.help.replacingOccurrences(of: "'", with: #"'\''"#))'"), "zsh: \(leaf.key) \(o.name)")
            }
        }
    }

    @Test func placeholdersGiveTheRightWords() {
        typealias W = CompletionWords
        #expect(W.slots("NAME free|premium").slots == [.peers, .words(["free", "premium"], nospace: false)])
        #expect(W.slots("PEER | 'FLOW'").slots == [.peers])
        #expect(W.slots("[COMMAND [SUBCOMMAND]]").slots == [.commands, .subcommandsOfPrevious])
        let set = W.slots("KEY=VALUE…")
        #expect(set.repeats && set.slots == [.words(Settings.keys.map { $0.key + "=" }, nospace: true)])
        #expect(W.slots("'FLOW'").slots == [.none] && W.slots("LABEL").slots == [.none] && W.slots("").slots.isEmpty)
        #expect(W.slots("[DIR]").slots == [.directories])
        #expect(OptionSpec.config.completionWords == .files)
        #expect(OptionSpec("--since", "DURATION|DATE", help: "").completionWords == W.none)
        #expect(OptionSpec("--detail", "metadata|full", help: "").completionWords == .words(["metadata", "full"], nospace: false))
        #expect(OptionSpec("--json", help: "").completionWords == nil)
        // The tier words of `peer tier` are Core's tier keywords.
        let tier = Tunnelctl.command(at: ["peer", "tier"])!
        #expect(W.slots(tier.synopsis).slots.last == .words(PeerTier.keywords, nospace: false))
    }

    /// `--peer` completes peer names wherever it appears; `--config` files everywhere, before the
    /// command too.
    @Test func valueCompletionsFollowTheTable() {
        let v = CompletionScript.valueCompletions
        #expect(v.contains { $0.key == "flows" && $0.option == "--peer" && $0.words == .peers })
        #expect(v.contains { $0.key == nil && $0.option == "--config" && $0.words == .files })
        #expect(v.contains { $0.key == "capture on" && $0.option == "--detail" })
        #expect(!v.contains { $0.key == nil && $0.option == "--detail" }, "--detail differs between commands: no fallback")
    }

    @Test func peersNamesReadsOnlyTheConfiguration() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-names-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let conf = dir.appendingPathComponent("tunneld.conf")
        // The state and runtime directories do not exist: --names must not look at them.
        try """
            [Interface]
            PrivateKeyFile = /nonexistent/key
            Address = 10.99.0.1/24
            StateDirectory = /nonexistent/state
            RuntimeDirectory = /nonexistent/run
            [Peer]
            Name = alice
            PublicKey = v12sHZm+e6qsmw5BPmPgO0Jo6e5aHqdLBB1MNHDVSGs=
            AllowedIPs = 10.99.0.2/32
            [Peer]
            Name = branch-office
            PublicKey = 0iqNnJaswcf0K9K4sNnDaDXgtSf/L7HDJRTbqKNAtkU=
            AllowedIPs = 10.99.0.3/32
            """.write(to: conf, atomically: true, encoding: .utf8)
        let r = run(["peers", "--names", "--config", conf.path])
        #expect(r.code == .ok && r.err.isEmpty, "\(r.err)")
        #expect(r.out == "alice\nbranch-office\n")
        let j = run(["peers", "--names", "--json", "--config", conf.path])
        #expect(j.out == "[\n  \"alice\",\n  \"branch-office\"\n]\n" || j.out.filter { !$0.isWhitespace } == #"["alice","branch-office"]"#, "\(j.out)")
        let missing = run(["peers", "--names", "--config", dir.appendingPathComponent("none.conf").path])
        #expect(missing.code == .failure && missing.out.isEmpty && missing.err.contains("cannot read the configuration"))
    }

    /// Every page names the product version (`ProductVersion`, the one both binaries print).
    @Test func everyPageCarriesTheVersion() throws {
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("man").path).filter { $0.hasSuffix(".5") || $0.hasSuffix(".8") }
        #expect(Set(pages) == ["tunneld.8", "tunnelctl.8", "tunneld.conf.5", "tunnelvision-rules.5"])
        for p in pages {
            let th = try page("man/" + p).split(separator: "\n").first { $0.hasPrefix(".TH ") }
            #expect(th?.contains("\"TunnelVision \(ProductVersion.current)\"") == true, "man/\(p): \(th ?? "no .TH line")")
        }
    }

    /// tunneld.conf(5) describes every key the parser accepts (and the wg-quick keys it refuses).
    @Test func configPageHasEveryKey() throws {
        let text = try page("man/tunneld.conf.5")
        for key in TunnelConfig.interfaceKeys + TunnelConfig.peerKeys + LimitSettings.keys {
            #expect(text.contains("\n.B \(key)\n") || text.contains("\n.BI \(key) "), "man/tunneld.conf.5 does not describe \(key)")
        }
    }

    /// tunnelvision-rules(5) describes every keyword a rule line may use.
    @Test func rulesPageHasEveryKeyword() throws {
        let text = try page("man/tunnelvision-rules.5")
        for k in PolicyParser.lineKeywords + PolicyParser.fieldKeywords + [PolicyParser.gatewayWord] {
            #expect(text.contains("\n.B \(k)") || text.contains("\n.BR \(k) ") || text.contains("\n.BI \(k) "), "man/tunnelvision-rules.5 does not describe '\(k)'")
        }
    }
}
