import Core
import Foundation
import Testing

@testable import tunnelctl

/// `TUNNELCTL_NOW` on the built binary (docs/session.md): an ISO time with a zone and epoch ms
/// give the same answer; anything else is a usage error, never silently the real clock.
@Suite(.serialized) struct NowOverrideTests {
    static func run(_ argv: [String], now: String) throws -> (code: Int32, out: String, err: String) {
        try UnprivilegedReadTests.runProcess(UnprivilegedReadTests.binary, argv, environment: [
            "PATH": "/usr/bin:/bin", "TUNNELCTL_TZ": "UTC", "TZ": "UTC", "LANG": "C", "TUNNELCTL_NOW": now])
    }

    @Test func isoAndEpochMillisecondsAgreeAndGarbageIsAnError() throws {
        let f = try SessionCommandTests.Fixture()
        defer { f.remove() }
        let args = ["session", "alice", "--config", f.config]
        let epoch = try Self.run(args, now: String(SessionCommandTests.now))
        let iso = try Self.run(args, now: TimeText.iso(SessionCommandTests.now))
        let offset = try Self.run(args, now: TimeText.iso(SessionCommandTests.now).replacingOccurrences(of: "Z", with: "+00:00"))
        #expect(epoch.code == 0 && epoch.out.contains("paused"), "\(epoch)")
        #expect(iso.out == epoch.out && iso.code == epoch.code)
        #expect(offset.out == epoch.out)
        // Ten minutes later alice's pause is ten minutes shorter: the override is really used.
        let later = try Self.run(args, now: TimeText.iso(SessionCommandTests.now + 600_000))
        #expect(later.out != epoch.out)
        let bad = try Self.run(args, now: "tomorrow")
        #expect(bad.code == 2 && bad.out.isEmpty && bad.err.contains("TUNNELCTL_NOW='tomorrow'"), "\(bad)")
    }
}
