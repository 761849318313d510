import Core
import Foundation
import Testing

@testable import tunnelctl

/// Golden tests for `tunnelctl policy check|test`. Set TUNNELVISION_UPDATE_GOLDEN=1 to rewrite
/// the golden files from the current output (then review the diff).
@Suite struct PolicyCommandTests {
    static let goldenSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let golden = Bundle.module.url(forResource: "Golden", withExtension: nil)!
    static var fixture: String { golden.appendingPathComponent("policy-fixture").path }
    static var broken: String { golden.appendingPathComponent("policy-broken").path }

    /// Runs tunnelctl; directory paths in the output are replaced by DIR.
    func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        _ = HistoryFixture.setUp  // TZ=UTC: a FLOW's `at` is local time
        let console = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: console)
        func clean(_ s: String) -> String {
            s.replacingOccurrences(of: Self.fixture, with: "DIR").replacingOccurrences(of: Self.broken, with: "BROKEN")
        }
        return (code, clean(console.out), clean(console.err))
    }

    func expectGolden(_ text: String, _ name: String) throws {
        if ProcessInfo.processInfo.environment["TUNNELVISION_UPDATE_GOLDEN"] == "1" {
            try text.write(to: Self.goldenSource.appendingPathComponent(name), atomically: true, encoding: .utf8)
            return
        }
        let want = try String(contentsOf: Self.golden.appendingPathComponent(name), encoding: .utf8)
        #expect(text == want, "golden \(name) differs:\n\(text)")
    }

    @Test func checkReportsWarningsAndNotes() throws {
        let r = run(["policy", "check", Self.fixture])
        #expect(r.code == .ok && r.err.isEmpty)
        try expectGolden(r.out, "policy-check.txt")
        let j = run(["policy", "check", "--json", "--policies", Self.fixture])
        #expect(j.code == .ok)
        try expectGolden(j.out, "policy-check.json")
    }

    @Test func checkSaysWhenTheShadowingCheckIsSkipped() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-shadow-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let many = (0..<1001).map { "block proto tcp port \($0 + 1)" }.joined(separator: "\n")
        try ("default allow\n" + many + "\n").write(to: dir.appendingPathComponent("10-many.rules"), atomically: true, encoding: .utf8)
        let r = run(["policy", "check", dir.path])
        #expect(r.out.contains("note: more than 1000 rules: the check for rules shadowed by earlier ones was skipped"))
        try "default allow\nblock proto tcp port 1\n".write(to: dir.appendingPathComponent("10-many.rules"), atomically: true, encoding: .utf8)
        #expect(!run(["policy", "check", dir.path]).out.contains("shadowed by earlier ones was skipped"))
    }

    @Test func checkFailsOnErrors() throws {
        let r = run(["policy", "check", Self.broken])
        #expect(r.code == .failure)
        try expectGolden(r.out, "policy-check-broken.txt")
        let j = run(["policy", "check", Self.broken, "--json"])
        #expect(j.code == .failure)
        try expectGolden(j.out, "policy-check-broken.json")
    }

    @Test(arguments: [
        ("policy-test-default.txt", ["tcp 10.99.0.2:40000 -> 203.0.113.7:8080 at 2026-03-04T12:00"], ExitCode.failure),
        ("policy-test-web.txt", ["tcp", "10.99.0.2:40000", "->", "203.0.113.7:443", "at", "2026-03-02T08:00"], ExitCode.ok),
        ("policy-test-private.txt", ["tcp [fd99::2]:40000 -> [fd00::5]:22 peer bob at 2026-03-04T12:00"], ExitCode.failure),
        ("policy-test-admin.txt", ["tcp 10.99.0.2:40000 -> 192.168.1.10:22 peer admin at 2026-03-04T12:00"], ExitCode.ok),
        ("policy-test-torrent.txt", ["udp 10.99.0.3:51000 -> 198.51.100.7:6881 tier free at 2026-03-04T12:00"], ExitCode.failure),
        ("policy-test-night.txt", ["tcp 10.99.0.3:51000 -> 198.51.100.7:443 tier free at 2026-03-04T23:30"], ExitCode.failure),
        ("policy-test-day.txt", ["tcp 10.99.0.3:51000 -> 198.51.100.7:443 tier free at 2026-03-07T23:30"], ExitCode.ok),
        ("policy-test-host.txt", ["tcp 10.99.0.3:51000 -> 198.51.100.7:443 host x.ads.example at 2026-03-04T12:00"], ExitCode.failure),
        ("policy-test-inbound.txt", ["icmp 198.51.100.7 -> 10.99.0.3 in at 2026-03-04T12:00"], ExitCode.failure),
    ])
    func testVerdicts(golden: String, flow: [String], code: ExitCode) throws {
        let r = run(["policy", "test", "--policies", Self.fixture] + flow)
        #expect(r.code == code && r.err.isEmpty, "\(r.err)")
        try expectGolden(r.out, golden)
    }

    @Test func testJSON() throws {
        let r = run(["policy", "test", "--json", "--policies", Self.fixture, "udp 10.99.0.3:51000 -> 198.51.100.7:6881 tier free at 2026-03-04T12:00"])
        #expect(r.code == .failure)
        try expectGolden(r.out, "policy-test-torrent.json")
        let d = run(["policy", "test", "--policies", Self.fixture, "--json", "tcp 10.99.0.2:40000 -> 203.0.113.7:8080 at 2026-03-04T12:00"])
        #expect(d.code == .failure)
        try expectGolden(d.out, "policy-test-default.json")
    }

    @Test func usageErrors() {
        let bad = run(["policy", "test", "--policies", Self.fixture, "tcp 10.0.0.1:1 -> 10.0.0.2:2 pear x"])
        #expect(bad.code == .usage)
        #expect(bad.err == """
            tunnelctl policy: bad FLOW 'tcp 10.0.0.1:1 -> 10.0.0.2:2 pear x': unknown word 'pear', did you mean 'peer'?; after the addresses come peer, tier, host, in|out, at
              FLOW: PROTO SRC[:PORT] -> DST[:PORT] [peer NAME] [tier NAME] [host NAME] [in|out] [at YYYY-MM-DDTHH:MM]

            """)
        let none = run(["policy"])
        #expect(none.code == .usage && none.err.hasPrefix("tunnelctl policy: missing subcommand"))
        let typo = run(["policy", "chek"])
        #expect(typo.code == .usage && typo.err.hasPrefix("tunnelctl policy: unknown subcommand 'chek', did you mean 'check'?"))
        let noFlow = run(["policy", "test", "--policies", Self.fixture])
        #expect(noFlow.code == .usage && noFlow.err.hasPrefix("tunnelctl policy: missing FLOW"))
        let extra = run(["policy", "check", Self.fixture, "more"])
        #expect(extra.code == .usage && extra.err == "tunnelctl policy: unexpected argument 'more'\n")
        let opt = run(["policy", "test", "--policies", Self.fixture, "tcp 10.0.0.1:1 -> 10.0.0.2:2", "--verbose"])
        #expect(opt.code == .usage && opt.err == """
            tunnelctl policy: unknown option '--verbose' for 'policy test'
            usage: tunnelctl policy test 'FLOW' [--policies DIR] [--json] [--config PATH]

            """)
        let reload = run(["policy", "reload", "--config", "/nonexistent/tunneld.conf"])
        #expect(reload.code == .failure && reload.err == "tunnelctl policy: cannot read the configuration /nonexistent/tunneld.conf (use --config PATH)\n")
        let reloadDir = run(["policy", "reload", "--policies", Self.fixture])
        #expect(reloadDir.code == .usage && reloadDir.err.contains("does not apply"))
        let help = run(["policy", "--help"])
        #expect(help.code == .ok && help.out.hasPrefix("usage: tunnelctl policy check [DIR]"))
    }

    @Test func unreadableOrBrokenDirectories() {
        let missing = run(["policy", "check", "/nonexistent-tv-policies"])
        #expect(missing.code == .failure && missing.err == "tunnelctl policy: /nonexistent-tv-policies: no such directory\n")
        let broken = run(["policy", "test", "--policies", Self.broken, "tcp 10.0.0.1:1 -> 10.0.0.2:2"])
        #expect(broken.code == .failure)
        #expect(broken.err.hasPrefix("BROKEN/10-broken.rules:2:7: error: unknown keyword 'prot', did you mean 'proto'?\n"))
        #expect(broken.err.hasSuffix("tunnelctl policy: BROKEN has errors; fix them (tunnelctl policy check BROKEN) and try again\n"))
    }

    @Test func emptyDirectoryWarns() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-policy-empty-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = run(["policy", "check", dir.path])
        #expect(r.code == .ok)
        #expect(r.out == """
            \(dir.path): warning: no *.rules files; every flow gets the built-in default (allow outbound, block inbound)
            \(dir.path): 0 rules in 0 files; default allow outbound, block inbound; 0 errors, 1 warning

            """)
    }

    @Test func shippedPoliciesAreClean() {
        let shipped = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../policies").standardized.path
        let r = run(["policy", "check", shipped])
        #expect(r.code == .ok)
        #expect(r.out.contains("0 errors, 0 warnings"), "\(r.out)")
        let smtp = run(["policy", "test", "--policies", shipped, "tcp 10.99.0.2:40002 -> 203.0.113.9:25"])
        #expect(smtp.code == .failure && smtp.out.contains("name    no-smtp"))
    }
}
