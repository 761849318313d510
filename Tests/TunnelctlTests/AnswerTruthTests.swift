import Config
import Daemon
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
            let entries = [([c.name], c)] + c.subcommands.map { ([c.name, $0.name], $0) }
            for (path, spec) in entries where spec.subcommands.isEmpty {
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

    // MARK: --peer names a peer

    /// A misspelt peer is an error with a did-you-mean (exit 1) for every filter; a peer that is
    /// no longer configured but has history is still a fine filter.
    @Test func anUnknownPeerInAFilterIsAnError() throws {
        let f = try Fixture()
        defer { f.remove() }
        // zoe was removed from the configuration; her flow stays in the history.
        let s = try StateStore(path: f.store)
        try s.insertFlow(FlowOpen(id: 40, proto: 17, src: IPAddress(v4: 0x0A63_0009), srcPort: 5353, dst: IPAddress(v4: 0x0A63_0001),
                                  dstPort: 53, peer: "zoe", at: SessionCommandTests.now - 50 * 60_000, verdict: .allow))
        try s.closeFlow(FlowClose(id: 40, at: SessionCommandTests.now - 49 * 60_000, counters: FlowCounters(bytesOut: 60, bytesIn: 90, packetsOut: 1, packetsIn: 1), reason: "idle"))
        let r = try Self.expectTranscripts([
            ["timeline", "--peer", "alcie"],
            ["flows", "--peer", "alcie"],
            ["refusals", "--peer", "alcie"],
            ["watch", "--peer", "mallory", "--count", "1"],
            ["flows", "--peer", "zoe"],
            ["timeline", "--peer", "zoe", "--since", "1d"],
        ], "truth-unknown-peer.txt", run: f.run, shown: Self.shown(f))
        #expect(r.map(\.code) == [.failure, .failure, .failure, .failure, .ok, .ok])
        #expect(r[0].out.isEmpty && r[0].err.contains("did you mean 'alice'?"))
    }

    /// Without a configuration to check against, `watch --ring` asks the tunneld next to the ring.
    @Test func watchChecksThePeerWithTheDaemonNextToTheRing() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-truth-peer-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ControlServer(path: dir + "/control.sock") { request, _ in
            guard case .peers = request else { return .failure(.failed, "not in this test") }
            return .peers(JSONGoldenTests.peers)
        }
        defer { server.stop() }
        let console = Console(capturing: true)
        #expect(Tunnelctl.run(["watch", "--ring", dir + "/live.ring", "--peer", "alcie"], console: console) == .failure)
        #expect(console.err == "tunnelctl watch: no peer named 'alcie', did you mean 'alice'? (configured: alice, bob, carol)\n")
    }

    // MARK: watch ends

    /// No tunneld: exit 3 at once, whether there is no feed at all or the one there was closed
    /// when tunneld stopped.
    @Test func watchWithoutTheDaemonExitsThreeAtOnce() throws {
        let f = try Fixture()
        defer { f.remove() }
        let started = Date()
        let r = try Self.expectTranscripts([["watch"], ["watch", "--peer", "alice", "--count", "1", "--json"]],
                                           "truth-watch-no-daemon.txt", run: f.run, shown: Self.shown(f))
        #expect(r.map(\.code) == [.daemonNotRunning, .daemonNotRunning])
        // A feed left behind by a tunneld that stopped.
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let producer = try RingProducer(directory: f.dir + "/run", slotCount: 64)
        producer.close()
        let closed = f.run(["watch", "--count", "1"])
        #expect(closed.code == .daemonNotRunning && closed.err.contains("was closed when it stopped"), "\(closed.err)")
        #expect(Date().timeIntervalSince(started) < 5)
    }

    /// `--count N` counts records that pass the filters; `--timeout` bounds the wait for them
    /// (exit 1 when fewer came), so a quiet peer cannot keep a script waiting.
    @Test func watchCountEndsAndTimeoutBoundsTheWait() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-truth-watch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let producer = try RingProducer(directory: dir, slotCount: 64)
        defer { producer.close() }
        let path = producer.path
        func run(_ argv: [String]) -> Result {
            let console = Console(capturing: true)
            let code = Tunnelctl.run(argv, console: console)
            return (code, console.out, console.err.replacingOccurrences(of: dir, with: "DIR"))
        }
        let r = try Self.expectTranscripts([
            ["watch", "--ring", path, "--peer", "carol", "--count", "1", "--timeout", "200ms"],
        ], "truth-watch-timeout.txt", run: run, shown: { $0.map { $0.replacingOccurrences(of: dir, with: "DIR") } })
        #expect(r[0].code == .failure)
        // Records that pass the filter end it: the second of alice's is the one that counts.
        let box = ResultBox()
        let console = Console(capturing: true)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            box.code = Tunnelctl.run(["watch", "--ring", path, "--peer", "alice", "--count", "2", "--timeout", "10s"], console: console)
            done.signal()
        }
        for _ in 0..<500 where !producer.hasConsumer { usleep(10_000) }
        let records = WatchTests.recorded
        for r in records { producer.publish(r) }
        producer.endBatch()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(box.code == .ok)
        #expect(console.out.split(separator: "\n").count == 2)
        #expect(console.out.split(separator: "\n").allSatisfy { $0.contains(" alice ") }, "\(console.out)")
    }

    // MARK: policy check without a configuration

    @Test func policyCheckSaysPeerNamesWereNotChecked() throws {
        let f = try Fixture()
        defer { f.remove() }
        let fixture = PolicyCommandTests.fixture
        func run(_ argv: [String]) -> Result {
            let console = Console(capturing: true)
            let code = Tunnelctl.run(argv, console: console)
            return (code, console.out.replacingOccurrences(of: fixture, with: "DIR"),
                    console.err.replacingOccurrences(of: fixture, with: "DIR"))
        }
        let r = try Self.expectTranscripts([["policy", "check", fixture]], "truth-policy-check-unchecked.txt", run: run,
                                           shown: { $0.map { $0.replacingOccurrences(of: fixture, with: "DIR") } })
        #expect(r[0].code == .ok && r[0].out.contains("note: peer names (admin) were not checked"))
        // With the configuration they are checked, and the note gives way to the warning.
        let checked = f.run(["policy", "check"])
        #expect(!checked.out.contains("were not checked") && checked.out.contains("'peer admin': no configured peer"), "\(checked.out)")
    }

    // MARK: a store that is not there

    /// `session`, `explain PEER` and `peers` without tunneld answer from the store: without one
    /// they say so where the answer would be, exit 1, and give no default answer.
    @Test func noStoreIsNoAnswer() throws {
        let f = try Fixture()
        defer { f.remove() }
        // StateDirectory pointing at a directory tunneld never wrote.
        let moved = try String(contentsOfFile: f.config, encoding: .utf8)
            .replacingOccurrences(of: "StateDirectory = \(f.dir)/state", with: "StateDirectory = \(f.dir)/elsewhere")
        try moved.write(toFile: f.config, atomically: true, encoding: .utf8)
        let r = try Self.expectTranscripts([
            ["session", "alice"], ["session"], ["session", "--json"], ["explain", "alice"], ["peers"],
        ], "truth-no-store.txt", run: f.run, shown: Self.shown(f))
        #expect(r.allSatisfy { $0.code == .failure })
        #expect(r.allSatisfy { !$0.out.contains("disconnected") && !$0.out.contains("opens a") && !$0.out.contains("not refused") })
        #expect(r[2].out.isEmpty, "--json keeps stdout for JSON")
    }

    // MARK: peer qr

    @Test func peerQRWithoutTheClientKeyRefuses() throws {
        let f = try PeerCommandTests().fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        func run(_ argv: [String]) -> Result {
            let console = Console(capturing: true)
            let code = Tunnelctl.run(argv + ["--config", f.conf], console: console)
            return (code, console.out.replacingOccurrences(of: f.dir, with: "DIR"), console.err.replacingOccurrences(of: f.dir, with: "DIR"))
        }
        #expect(run(["peer", "add", "bob"]).code == .ok)
        let noKey = run(["peer", "qr", "bob"])
        // A key that is not bob's (alice's public key is all 2s: any other private key).
        try FileManager.default.createDirectory(atPath: f.dir + "/clients", withIntermediateDirectories: true)
        try (WireGuardKey(bytes: [UInt8](repeating: 9, count: 32))!.base64 + "\n").write(toFile: f.dir + "/clients/bob.key", atomically: true, encoding: .utf8)
        let wrongKey = run(["peer", "qr", "bob", "--png", f.dir + "/bob.png"])
        let text = [(["peer", "qr", "bob"], noKey), (["peer", "qr", "bob", "--png", "DIR/bob.png"], wrongKey)]
            .map { Self.transcript($0 + ["--config", "DIR/tunneld.conf"], $1) }.joined(separator: "\n")
        try HistoryFixture.expectGolden(text, "truth-peer-qr.txt")
        #expect(noKey.code == .failure && noKey.out.isEmpty && noKey.err.contains("peer add bob --keep-client-key"))
        #expect(wrongKey.code == .failure && !FileManager.default.fileExists(atPath: f.dir + "/bob.png"))
        // The client's own key put there by hand: a usable code.
        try FileManager.default.removeItem(atPath: f.dir + "/clients/bob.key")
        #expect(run(["peer", "remove", "bob"]).code == .ok)
        #expect(run(["peer", "add", "bob", "--keep-client-key"]).code == .ok)
        #expect(run(["peer", "qr", "bob"]).code == .ok)
    }

    // MARK: live flows' counts

    /// carol's web flow is open: with tunneld running, `flows` and `timeline` show the counts its
    /// flow table has now (160 packets out, not the 150 of the last record); without it they say
    /// the counts are as of the last record.
    @Test func liveFlowsShowTheDaemonsCounts() throws {
        let f = try Fixture()
        defer { f.remove() }
        let down = try Self.expectTranscripts([["flows", "--peer", "carol"], ["timeline", "--peer", "carol"]],
                                              "truth-live-counts-no-daemon.txt", run: f.run, shown: Self.shown(f))
        #expect(down.allSatisfy { $0.code == .ok })
        #expect(down[0].out.contains("as of the flow's last record") && down[1].out.contains("as of its last record"))
        let server = try JSONGoldenTests.daemon(f)
        defer { server.stop() }
        let up = try Self.expectTranscripts([["flows", "--peer", "carol"], ["timeline", "--peer", "carol"]],
                                            "truth-live-counts.txt", run: f.run, shown: Self.shown(f))
        #expect(up.allSatisfy { $0.code == .ok })
        #expect(up[0].out.contains("160p/") && up[0].out.contains(" live") && !up[0].out.contains("150p/"))
        #expect(up[1].out.contains("open, now 160p/"))
        let json = f.run(["flows", "--peer", "carol", "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(rows.first?["packetsOut"] as? Int == 160 && rows.first?["bytesIn"] as? Int == 500_000)
        let timeline = f.run(["timeline", "--peer", "carol", "--json"])
        #expect(timeline.out.contains("\"packetsOut\" : 160"), "\(timeline.out)")
    }

    /// A tunneld that cannot tell its flows leaves the history as the answer, saying why the
    /// counts are the recorded ones — never an error in place of the history.
    @Test func liveFlowsFromATunneldThatCannotTell() throws {
        let f = try Fixture()
        defer { f.remove() }
        try FileManager.default.createDirectory(atPath: f.dir + "/run", withIntermediateDirectories: true)
        let server = try ControlServer(path: f.dir + "/run/control.sock") { _, _ in .status(StatusRenderTests.reply(offload: nil)) }
        defer { server.stop() }
        let flows = f.run(["flows", "--peer", "carol"])
        #expect(flows.code == .ok && flows.out.hasSuffix("open: packets and bytes as of the flow's last record (LAST): tunneld answered status to liveFlows\n"), "\(flows.out)")
        #expect(flows.out.contains("150p/"))
        let timeline = f.run(["timeline", "--peer", "carol"])
        #expect(timeline.code == .ok && timeline.out.contains("as of its last record"))
    }

    // MARK: papercuts

    /// Daemon markers carry times as epoch milliseconds in the store; the timeline and `audit
    /// list` show them as every other time. An operator's own detail is shown as written.
    @Test func daemonMarkerTimesAreTimes() throws {
        let f = try HistoryFixture()
        let s = try f.store()
        let n = HistoryFixture.now, m = HistoryFixture.minute
        try s.addMarker(MarkerInput(at: n - 10 * m, label: "watchdog: alice's window ended", kind: .automatic,
                                    detail: "allowed_until=\(n - 10 * m) reconnect_at=\(n + 35 * m)"))
        try s.addMarker(MarkerInput(at: n - 5 * m, label: "note", kind: .manual, detail: "seen_at=\(n)"))
        let r = try Self.expectTranscripts([["timeline", "--since", "1h"], ["audit", "list"]], "truth-marker-times.txt", run: f.run,
                                           shown: Self.shown(f))
        #expect(r.allSatisfy { $0.code == .ok })
        #expect(r[0].out.contains("allowed_until=2026-03-01 11:50:00 UTC reconnect_at=2026-03-01 12:35:00 UTC"), "\(r[0].out)")
        #expect(r[0].out.contains("seen_at=\(n)"), "a manual marker's detail is the operator's text")
    }

    /// A peer whose `Expires` passed (or that is disabled) is that, in `session` and `peers`, not
    /// "disconnected, the next connection opens a window" or "paused".
    @Test func anExpiredPeerIsExpiredEverywhere() throws {
        let f = try HistoryFixture()
        _ = try f.store()
        let text = try String(contentsOfFile: f.config, encoding: .utf8) + """

            [Peer]
            Name = erin
            PublicKey = YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY=
            AllowedIPs = 10.99.0.9/32
            Expires = 2026-01-01

            [Peer]
            Name = dora
            PublicKey = MTIzNDU2YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=
            AllowedIPs = 10.99.0.10/32
            Disabled = true
            """
        try text.write(toFile: f.config, atomically: true, encoding: .utf8)
        let erin = f.run(["session", "erin"])
        #expect(erin.out.contains("erin (free): expired, refused whatever its window"), "\(erin.out)\(erin.err)")
        let dora = f.run(["session", "dora"])
        #expect(dora.out.contains("dora (free): disabled, refused whatever its window"), "\(dora.out)\(dora.err)")
    }

    /// A refusal whatever the window (a disabled or expired peer: stored with window 0) is not
    /// shown as a pause after a window that ended at the epoch.
    @Test func aRestrictedPeersRefusalIsNoPause() throws {
        let f = try HistoryFixture()
        let s = try f.store()
        try s.recordRefusal(.session(peer: "alice", windowEnd: 0, at: HistoryFixture.now - 60_000, reason: "expired", count: 5))
        let r = f.run(["refusals", "--peer", "alice"])
        #expect(r.code == .ok)
        #expect(r.out.contains("refused (expired), not a pause"), "\(r.out)")
        #expect(!r.out.contains("window ending 00:00:00"), "\(r.out)")
    }

    /// `capture extract -o FILE` refuses an existing FILE, as `import -o` does, and leaves it as it was.
    @Test func captureExtractRefusesAnExistingFile() throws {
        let f = try HistoryFixture()
        try f.buildHistory()
        try "keep me".write(toFile: f.dir + "/out.pcap", atomically: true, encoding: .utf8)
        let r = try Self.expectTranscripts([["capture", "extract", "--flow", "1", "-o", f.dir + "/out.pcap"]],
                                           "truth-capture-extract-exists.txt", run: f.run, shown: Self.shown(f))
        #expect(r[0].code == .failure)
        #expect(try String(contentsOfFile: f.dir + "/out.pcap", encoding: .utf8) == "keep me")
    }

    /// `explain --help` says which exit code means what, next to each argument.
    @Test func explainHelpNamesItsExitCodes() {
        let console = Console(capturing: true)
        #expect(Tunnelctl.run(["explain", "--help"], console: console) == .ok)
        #expect(console.out.contains("(exit 0 refused, 1 not refused)"))
    }
}
