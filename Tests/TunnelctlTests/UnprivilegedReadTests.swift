import Core
import Foundation
import Testing

@testable import tunnelctl

/// Every store-reading command run by an unprivileged user (nobody, via `setpriv`) on the built
/// `tunnelctl` binary, against a real store it may not read: the session fixture (alice is a
/// paused free peer) with its state directory chmod 0700, owned by root. Each must fail (exit 1)
/// naming the permission problem, and none may answer — no "not refused", no "no refusals", no
/// empty table or JSON on stdout. Needs root (to drop to nobody); skipped otherwise.
@Suite(.serialized) struct UnprivilegedReadTests {
    static let setpriv = "/usr/bin/setpriv"
    static var canDrop: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) }

    /// The `tunnelctl` executable next to the test bundle (`.build/<triple>/debug/tunnelctl`).
    static var binary: String {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("tunnelctl").path
    }

    /// The fixture's "now" (alice is paused then) and time zone.
    static let environment = ["PATH": "/usr/bin:/bin", "TUNNELCTL_TZ": "UTC", "TZ": "UTC", "LANG": "C",
                              "TUNNELCTL_NOW": String(SessionCommandTests.now)]

    /// Runs the binary as nobody (uid/gid 65534, no supplementary groups).
    static func runAsNobody(_ argv: [String]) throws -> (code: Int32, out: String, err: String) {
        try runProcess(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", binary] + argv, environment: environment)
    }

    /// Runs `executable` with `arguments` and `environment` (from `/`); its exit status and output.
    static func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]) throws
        -> (code: Int32, out: String, err: String)
    {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.environment = environment
        p.currentDirectoryURL = URL(fileURLWithPath: "/")
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// Every command that reads the store (or the capture directory beside it).
    static let readCommands: [[String]] = [
        ["session"], ["session", "alice"], ["session", "--json"],
        ["explain", "alice"], ["explain", "alice", "--json"], ["explain", "tcp 10.99.0.2:40000 -> 192.168.1.5:22"],
        ["refusals"], ["refusals", "--json"], ["refusals", "--peer", "alice"],
        ["flows"], ["flows", "--blocked"], ["flows", "--json"],
        ["timeline"], ["timeline", "--json"],
        ["audit", "list"], ["audit", "list", "--json"],
        ["retention", "show"], ["retention", "show", "--json"],
        ["prune", "--dry-run"], ["prune", "--dry-run", "--json"],
        ["capture", "list"], ["capture", "list", "--json"], ["capture", "extract", "--flow", "1", "-o", "/tmp/tv-nobody.pcap"],
        ["peers"], ["peers", "--json"],
    ]

    /// The fixture, readable by nobody except for what the test takes away.
    static func fixture() throws -> SessionCommandTests.Fixture {
        let f = try SessionCommandTests.Fixture()
        let fm = FileManager.default
        try fm.createDirectory(atPath: f.dir + "/state/capture", withIntermediateDirectories: true)
        try fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: f.dir)
        try fm.setAttributes([.posixPermissions: 0o644], ofItemAtPath: f.config)
        return f
    }

    func expectRefusedAnswer(_ argv: [String], _ r: (code: Int32, out: String, err: String), naming problem: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        let what = "tunnelctl \(argv.joined(separator: " ")) as nobody: exit \(r.code)\nstdout: \(r.out)\nstderr: \(r.err)"
        #expect(r.code == 1, "\(what)", sourceLocation: sourceLocation)
        #expect(r.err.contains(problem), "\(what)", sourceLocation: sourceLocation)
        #expect(r.err.contains("run as root or with sudo"), "says what to do: \(what)", sourceLocation: sourceLocation)
        #expect(r.out.isEmpty, "no answer on stdout: \(what)", sourceLocation: sourceLocation)
        for wrong in ["not refused", "no refusals", "no history yet", "no capture files", "factory value"] {
            #expect(!(r.out + r.err).contains(wrong), "'\(wrong)': \(what)", sourceLocation: sourceLocation)
        }
    }

    @Test(.enabled(if: canDrop, "needs root and /usr/bin/setpriv to run tunnelctl as nobody"))
    func storeInAStateDirectoryNobodyMayEnter() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary), "build tunnelctl first (swift build --build-tests): \(Self.binary)")
        let f = try Self.fixture()
        defer { f.remove() }
        try FileManager.default.setAttributes([.posixPermissions: 0o700, .ownerAccountID: 0], ofItemAtPath: f.dir + "/state")
        // As root the same commands answer (alice is paused): the fixture is a real store.
        let root = Process()
        root.executableURL = URL(fileURLWithPath: Self.binary)
        root.arguments = ["explain", "alice", "--config", f.config]
        root.environment = Self.environment
        root.standardOutput = FileHandle.nullDevice
        try root.run()
        root.waitUntilExit()
        #expect(root.terminationStatus == 0, "as root, alice is refused")
        for argv in Self.readCommands {
            let full = argv + ["--config", f.config]
            expectRefusedAnswer(full, try Self.runAsNobody(full), naming: "Permission denied (")
        }
    }

    /// The directory may be entered but state.db itself is 0600: SQLite's open fails with EACCES.
    @Test(.enabled(if: canDrop, "needs root and /usr/bin/setpriv to run tunnelctl as nobody"))
    func storeFileNobodyMayRead() throws {
        let f = try Self.fixture()
        defer { f.remove() }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: f.dir + "/state")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: f.store)
        for argv in [["explain", "alice"], ["refusals"], ["session", "alice"], ["timeline"], ["audit", "list"]] {
            let full = argv + ["--config", f.config]
            expectRefusedAnswer(full, try Self.runAsNobody(full), naming: "cannot open \(f.store): Permission denied (errno 13)")
        }
    }

    /// A configuration nobody may read is an error naming it, for every read command (and
    /// `--help` still works without it).
    @Test(.enabled(if: canDrop, "needs root and /usr/bin/setpriv to run tunnelctl as nobody"))
    func configurationNobodyMayRead() throws {
        let f = try Self.fixture()
        defer { f.remove() }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: f.config)
        for argv in Self.readCommands {
            let full = argv + ["--config", f.config]
            expectRefusedAnswer(full, try Self.runAsNobody(full),
                                naming: "cannot read the configuration \(f.config): Permission denied (errno 13)")
        }
        let help = try Self.runAsNobody(["explain", "--help", "--config", f.config])
        #expect(help.code == 0 && help.out.hasPrefix("usage: tunnelctl explain"))
    }
}
