import ControlProtocol
import Daemon
import Core
import Foundation
import LiveFeed
import Testing

@testable import tunnelctl

/// `tunnelctl watch`: the line and JSON formats against golden files (records recorded from a
/// run, with fixed times), the `--peer`/`--blocked` filters, and the whole command over a real
/// ring including the re-attach after a producer restart.
/// TUNNELVISION_UPDATE_GOLDEN=1 rewrites the golden files (review the diff).
@Suite struct WatchTests {
    static let goldenSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let golden = Bundle.module.url(forResource: "Golden", withExtension: nil)!

    func expectGolden(_ text: String, _ name: String) throws {
        if ProcessInfo.processInfo.environment["TUNNELVISION_UPDATE_GOLDEN"] == "1" {
            try text.write(to: Self.goldenSource.appendingPathComponent(name), atomically: true, encoding: .utf8)
            return
        }
        let want = try String(contentsOf: Self.golden.appendingPathComponent(name), encoding: .utf8)
        #expect(text == want, "golden \(name) differs:\n\(text)")
    }

    /// A handful of records as tunneld produces them: a TCP flow opening and its first packets
    /// (captured), a blocked IPv6 UDP packet, an ICMP echo, a refusal, a handshake, a flow close,
    /// and a record from a newer producer (unknown kind and verdict).
    static var recorded: [LiveRecord] {
        let t0: UInt64 = 1_764_417_600_123_456_789  // 2025-11-29T12:00:00.123456789Z
        var out: [LiveRecord] = []
        var r = LiveRecord()
        r.timeNanoseconds = t0
        r.flowID = 7
        r.kind = .flowOpen
        r.direction = .out
        r.ipProtocol = 6
        r.ipVersion = 4
        r.sourceLow = 0x0A63_0002  // 10.99.0.2
        r.destinationLow = 0x0A01_0001  // 10.1.0.1
        r.sourcePort = 40_000
        r.destinationPort = 5201
        r.length = 60
        r.verdict = .allow
        r.ruleIndex = 3
        r.policyGeneration = 2  // the generation the fake daemon below runs
        r.peerIndex = 1
        r.peerName = LivePeerName("alice")
        out.append(r)
        r.kind = .packet
        r.tcpFlags = 0x02
        r.captureFileSequence = 1
        r.captureOffset = 24
        out.append(r)
        r.timeNanoseconds = t0 + 1_500_000
        r.direction = .in
        swap(&r.sourceLow, &r.destinationLow)
        swap(&r.sourcePort, &r.destinationPort)
        r.tcpFlags = 0x12
        r.captureOffset = 100
        out.append(r)
        var b = LiveRecord()
        b.timeNanoseconds = t0 + 2_000_000
        b.flowID = 8
        b.ipProtocol = 17
        b.ipVersion = 6
        b.sourceHigh = 0xFD00_0000_0000_0000
        b.sourceLow = 2
        b.destinationHigh = 0x2001_0DB8_0000_0000
        b.destinationLow = 0x53
        b.sourcePort = 5353
        b.destinationPort = 53
        b.length = 80
        b.verdict = .block
        b.peerIndex = 2
        b.peerName = LivePeerName("bob-the-very-long-name")
        out.append(b)
        var i = LiveRecord()
        i.timeNanoseconds = t0 + 3_000_000
        i.flowID = 9
        i.ipProtocol = 1
        i.ipVersion = 4
        i.sourceLow = 0x0A63_0002
        i.destinationLow = 0x0808_0808
        i.length = 84
        i.verdict = .reject
        i.ruleIndex = 0
        i.peerIndex = 1
        i.peerName = LivePeerName("alice")
        out.append(i)
        var f = LiveRecord()
        f.timeNanoseconds = t0 + 4_000_000
        f.kind = .refusal
        f.peerIndex = 2
        f.peerName = LivePeerName("bob")
        f.detail = 1
        out.append(f)
        var h = LiveRecord()
        h.timeNanoseconds = t0 + 5_000_000
        h.kind = .handshake
        h.peerIndex = 3
        out.append(h)
        var c = out[0]
        c.timeNanoseconds = t0 + 6_000_000_000
        c.kind = .flowClose
        c.detail = 123_456
        c.detail2 = 99
        out.append(c)
        var fh = LiveRecord.flowHost(flowID: 7, peerIndex: 1, verdict: .allow, host: "allowed.test")
        fh.timeNanoseconds = t0 + 1_200_000
        fh.peerName = LivePeerName("alice")
        out.append(fh)
        var fb = LiveRecord.flowHost(flowID: 9, peerIndex: 1, verdict: .block,
                                     host: "a-very-long-tracking-subdomain-name-0123456789.ads.example.com.cdn.test")
        fb.timeNanoseconds = t0 + 1_300_000
        fb.peerName = LivePeerName("alice")
        out.append(fb)
        var u = out[1]
        u.kind = LiveEventKind(rawValue: 9)
        u.verdict = Verdict(rawValue: 7)
        u.direction = Direction(rawValue: 5)
        out.append(u)
        return out
    }

    @Test func lineFormatIsGolden() throws {
        try expectGolden(Self.recorded.map(Tunnelctl.textLine).joined(separator: "\n") + "\n", "watch-lines.txt")
    }

    /// The running policy's rules as `policy show` reports them, by ring rule index.
    static let rules = [
        RuleRef(file: "/etc/tunnelvision/policies/10-base.rules", line: 3, name: "no-ping-out"),
        RuleRef(file: "/etc/tunnelvision/policies/10-base.rules", line: 5, name: nil),
        RuleRef(file: "/etc/tunnelvision/policies/20-web.rules", line: 1, name: "dns"),
        RuleRef(file: "/etc/tunnelvision/policies/20-web.rules", line: 4, name: "iperf"),
    ]

    @Test func jsonFormatIsGoldenAndParses() throws {
        let lines = try Self.recorded.map { try Tunnelctl.jsonLine($0, rules: Self.rules) }
        try expectGolden(lines.joined(separator: "\n") + "\n", "watch.jsonl")
        var keys: Set<String>? = nil
        for (line, r) in zip(lines, Self.recorded) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["kind"] as? String == r.kind.description)
            #expect(TimeText.parseISO(object["time"] as? String ?? "") == Int64(r.timeNanoseconds / 1_000_000))
            #expect(keys == nil || keys == Set(object.keys), "every line has every key")
            keys = Set(object.keys)
        }
    }

    @Test func jsonWithoutTheRuleTable() throws {
        // Without an answer from tunneld (or from another generation) the rule is not known:
        // null, though a rule decided (`default` false); a record no rule decided is the default.
        let ruled = try #require(try JSONSerialization.jsonObject(with: Data(try Tunnelctl.jsonLine(Self.recorded[0], rules: nil).utf8)) as? [String: Any])
        #expect(ruled["rule"] is NSNull && ruled["default"] as? Bool == false)
        let byDefault = try #require(try JSONSerialization.jsonObject(with: Data(try Tunnelctl.jsonLine(Self.recorded[3], rules: nil).utf8)) as? [String: Any])
        #expect(byDefault["rule"] is NSNull && byDefault["default"] as? Bool == true)
    }

    /// `watch --json` against a ring and a control socket side by side (as tunneld lays out its
    /// RuntimeDirectory): the rule index becomes the rule `policy show` names.
    @Test func watchJSONNamesTheRuleFromTheDaemon() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-watch-json-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let show = PolicyShowReply(
            policy: PolicySummary(generation: 2, files: ["p/10.rules"], ruleCount: 4, loadedAtMs: 0),
            rules: Self.rules.map { PolicyRuleStatus(file: $0.file, line: $0.line, text: "allow", name: $0.name, hits: 0) }
                + [PolicyRuleStatus(file: "(built-in)", line: 0, text: "built-in default", hits: 0)])
        let server = try ControlServer(path: dir + "/control.sock") { request, _ in
            request == .policyShow ? .policyShow(show) : .failure(.failed, "not in this test")
        }
        defer { server.stop() }
        let producer = try RingProducer(directory: dir, slotCount: 64)
        let console = Console(capturing: true)
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        let path = producer.path
        Thread.detachNewThread {
            box.code = Tunnelctl.run(["watch", "--json", "--ring=\(path)", "--count=3"], console: console)
            done.signal()
        }
        for _ in 0..<500 where !producer.hasConsumer { usleep(10_000) }
        try #require(producer.hasConsumer)
        // A record of an older generation (decided before a reload) names no rule: the daemon's
        // table is generation 2's, and index 3 there may be another rule.
        var older = Self.recorded[0]
        older.policyGeneration = 1
        producer.publish(Self.recorded[0])
        producer.publish(older)
        producer.publish(Self.recorded[3])
        producer.endBatch()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(box.code == .ok)
        let lines = console.out.split(separator: "\n").map(String.init)
        #expect(lines == [try Tunnelctl.jsonLine(Self.recorded[0], rules: Self.rules), try Tunnelctl.jsonLine(older, rules: nil),
                          try Tunnelctl.jsonLine(Self.recorded[3], rules: Self.rules)])
        #expect(lines.first?.contains(#""rule":{"file":"/etc/tunnelvision/policies/20-web.rules","line":4,"name":"iperf"}"#) == true)
    }

    @Test func filters() {
        let all = Self.recorded
        let peer = Tunnelctl.WatchOptions(ringPath: "", peer: "alice")
        #expect(all.filter(peer.accepts).map(\.flowID) == [7, 7, 7, 9, 7, 7, 9, 7])
        let blocked = Tunnelctl.WatchOptions(ringPath: "", blockedOnly: true)
        #expect(all.filter(blocked.accepts).map(\.kind) == [.packet, .packet, .refusal, .flowHost, LiveEventKind(rawValue: 9)])
    }

    @Test func liveViewShowsTopFlowsNewFlowsAndBlocks() {
        var view = WatchView()
        for r in Self.recorded { view.add(r) }
        let screen = view.render(nowNanoseconds: Self.recorded[0].timeNanoseconds)
        #expect(screen.contains("TOP FLOWS"))
        #expect(screen.contains("10.99.0.2:40000 > 10.1.0.1:5201"))
        #expect(screen.contains("NEW FLOWS\n  2025-11-29T12:00:00.123456789Z flow-open out alice tcp"))
        #expect(screen.contains("refusal bob reason free-pause"))
        #expect(screen.contains("[fd00::2]:5353 > [2001:db8::53]:53 len 80 block"))
        view.tick()
        #expect(view.render(nowNanoseconds: 0).contains("(no traffic)"))
    }

    /// The live view's PEERS section: each peer's state, time left and the limits in force with
    /// the quota's use; when tunneld does not answer it says so rather than showing a table.
    @Test func liveViewShowsPeersAndTheirLimits() {
        var view = WatchView()
        let nowMs = JSONGoldenTests.now
        #expect(view.render(nowNanoseconds: UInt64(nowMs) * 1_000_000).contains("PEERS\n  (asking tunneld)"))
        view.peers = .success(JSONGoldenTests.peers)
        let screen = view.render(nowNanoseconds: UInt64(nowMs) * 1_000_000)
        #expect(screen.contains("PEERS\n  PEER"))
        let alice = screen.split(separator: "\n").first { $0.hasPrefix("  alice") }.map(String.init) ?? ""
        #expect(alice.contains("connected") && alice.contains("6m00s left"), "\(alice)")
        #expect(alice.contains("session 20m then pause 45m, quota 1GiB"), "\(alice)")
        #expect(alice.contains("(312.0 MiB of 1GiB used)"), "\(alice)")
        let carol = screen.split(separator: "\n").first { $0.hasPrefix("  carol") }.map(String.init) ?? ""
        #expect(carol.contains("paused, 35m00s left") && carol.contains("idle 10m") && carol.contains("100.0 MiB of 100MiB down used"), "\(carol)")
        let bob = screen.split(separator: "\n").first { $0.hasPrefix("  bob") }.map(String.init) ?? ""
        #expect(bob.contains("no limits") && bob.hasSuffix("no limits"), "\(bob)")
        view.peers = .failure(WatchPeers.Unavailable(message: "tunneld does not answer"))
        let down = view.render(nowNanoseconds: UInt64(nowMs) * 1_000_000)
        #expect(down.contains("PEERS\n  (not known: tunneld does not answer)"))
        #expect(!down.contains("  alice"))
    }

    /// Runs `tunnelctl watch` over a real ring on another thread; the producer restarts half-way.
    @Test func watchSurvivesAProducerRestart() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-watch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var producer = try RingProducer(directory: dir, slotCount: 64)
        let console = Console(capturing: true)
        let done = DispatchSemaphore(value: 0)
        let path = dir + "/live.ring"
        let box = ResultBox()
        Thread.detachNewThread {
            box.code = Tunnelctl.run(["watch", "--ring=\(path)", "--count=4"], console: console)
            done.signal()
        }
        func waitForConsumer(_ p: RingProducer) throws {
            for _ in 0..<500 where !p.hasConsumer { usleep(10_000) }
            try #require(p.hasConsumer)
        }
        try waitForConsumer(producer)
        let records = Self.recorded
        producer.publish(records[0])
        producer.publish(records[1])
        producer.endBatch()
        usleep(50_000)
        producer.close()
        producer = try RingProducer(directory: dir, slotCount: 64)  // the daemon restarted
        try waitForConsumer(producer)
        producer.publish(records[3])
        producer.publish(records[5])
        producer.endBatch()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(box.code == .ok)
        let want = [records[0], records[1], records[3], records[5]].map(Tunnelctl.textLine).joined(separator: "\n") + "\n"
        #expect(console.out == want)
        #expect(console.err.contains("re-attached to the new live feed"))
    }

    @Test func busyRingIsAnError() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tv-watch-busy-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let producer = try RingProducer(directory: dir, slotCount: 64)
        let first = try RingConsumer(path: producer.path)
        let console = Console(capturing: true)
        #expect(Tunnelctl.run(["watch", "--ring=\(producer.path)"], console: console) == .failure)
        #expect(console.err.contains("watch"))
        _ = first
    }
}

/// The exit code handed back from the watch thread.
final class ResultBox: @unchecked Sendable {
    // Safe: written by the watch thread before it signals, read after the wait.
    var code: ExitCode = .failure
}
