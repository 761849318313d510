import Core
import Glibc
import Engine
import Packet
import Policy
import Runtime
import Synchronization
import SystemIO
import Testing
import TestSupport
import WireGuard

/// Host rules on the data path (docs/hosts.md): pending flows, held first
/// payloads, DNS-learned names, through the whole engine over in-memory fakes.
@Suite(.serialized) struct EngineHostTests {
    static let rules = """
        default allow
        default in block
        block host blocked.test reason "blocked host"
        reject host rejected.test
        block host tracker.test
        allow proto tcp port 22
        """
    static let alice = "10.99.0.2"
    static let server = "198.19.0.9"
    static let syn: UInt8 = 0x02, ack: UInt8 = 0x10, psh: UInt8 = 0x18, rst: UInt8 = 0x04

    static func harness(_ rules: String = rules, configure: (inout GatewayOptions) -> Void = { _ in }) throws -> EngineHarness {
        var options = GatewayOptions()
        configure(&options)
        let h = try EngineHarness(rules: rules, options: options)
        try h.handshake()
        return h
    }

    /// SYN (passes while the flow waits), then the data segments.
    static func synThen(_ h: EngineHarness, port: UInt16 = 443, sport: UInt16 = 40000, to dst: String = server) throws {
        try h.sendPacket(TestPackets.tcp(from: alice, sport, to: dst, port, seq: 999, flags: syn))
        #expect(h.tun.waitWritten(count: 1).count == 1)
    }

    static func segment(_ bytes: [UInt8], at offset: Int, port: UInt16 = 443, sport: UInt16 = 40000,
                        to dst: String = server) -> [UInt8]
    {
        TestPackets.tcp(from: alice, sport, to: dst, port, seq: 1000 + UInt32(offset), ack: 1, flags: psh, payload: bytes)
    }

    @Test func pendingFlowWithAllowedSNIIsReleased() throws {
        let h = try Self.harness()
        try Self.synThen(h)
        let hello = TestPackets.tlsClientHello(serverName: "allowed.test", size: 400)
        let data = Self.segment(hello, at: 0)
        try h.sendPacket(data)
        #expect(h.tun.waitWritten(count: 1) == [data])
        let later = Self.segment([1, 2, 3], at: hello.count)
        try h.sendPacket(later)
        #expect(h.tun.waitWritten(count: 1) == [later])
        #expect(h.engine.counters.count(.pending) == 1)
        #expect(h.engine.counters.count(.learned) == 1)
    }

    @Test func pendingFlowWithBlockedSNIIsDropped() throws {
        let h = try Self.harness()
        try Self.synThen(h)
        let hello = TestPackets.tlsClientHello(serverName: "Blocked.Test", size: 400)
        try h.sendPacket(Self.segment(hello, at: 0))
        try h.sendPacket(Self.segment([1, 2, 3], at: hello.count))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 2)
        // Another name on the same address and port passes.
        try Self.synThen(h, sport: 40001)
        let ok = Self.segment(TestPackets.tlsClientHello(serverName: "allowed.test", size: 400), at: 0, sport: 40001)
        try h.sendPacket(ok)
        #expect(h.tun.waitWritten(count: 1) == [ok])
    }

    @Test func httpHostIsReadOnAnyPort() throws {
        let h = try Self.harness()
        try Self.synThen(h, port: 8080)
        try h.sendPacket(Self.segment(Array("GET / HTTP/1.1\r\nHost: blocked.test:8080\r\n\r\n".utf8), at: 0, port: 8080))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 1)
    }

    @Test func rejectedHostGetsAReset() throws {
        let h = try Self.harness()
        try Self.synThen(h)
        try h.sendPacket(Self.segment(TestPackets.tlsClientHello(serverName: "rejected.test", size: 400), at: 0))
        let answer = try #require(try h.receivePacket())
        let parsed = try answer.withUnsafeBytes { try PacketParser.parse($0) }
        #expect(parsed.proto == .tcp)
        #expect(parsed.tcpFlags.contains(.rst))
        #expect(parsed.destinationPort == 40000)
        #expect(h.engine.counters.count(.policyReject) == 1)
    }

    @Test func clientHelloSplitOverSegmentsIsReassembled() throws {
        for (name, passes) in [("allowed.test", true), ("blocked.test", false)] {
            let h = try Self.harness()
            try Self.synThen(h)
            let hello = TestPackets.tlsClientHello(serverName: name, size: 1500)
            let parts = [Self.segment(Array(hello[0..<600]), at: 0), Self.segment(Array(hello[600..<1200]), at: 600),
                         Self.segment(Array(hello[1200...]), at: 1200)]
            for p in parts { try h.sendPacket(p) }
            if passes {
                #expect(h.tun.waitWritten(count: 3) == parts)
            } else {
                #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
            }
            #expect(h.engine.counters.count(.heldPackets) == 2)
        }
    }

    @Test func outOfOrderSegmentsAreReassembled() throws {
        let h = try Self.harness()
        try Self.synThen(h)
        let hello = TestPackets.tlsClientHello(serverName: "allowed.test", size: 1200)
        let second = Self.segment(Array(hello[700...]), at: 700)
        let first = Self.segment(Array(hello[0..<700]), at: 0)
        try h.sendPacket(second)
        try h.sendPacket(first)
        // Held first, released in arrival order when the name is read.
        #expect(h.tun.waitWritten(count: 2) == [second, first])
    }

    @Test func flowThatLearnsNothingIsDecidedAfterTheTimeout() throws {
        let h = try Self.harness { $0.hostPendingTimeoutMs = 200 }
        try Self.synThen(h)
        let hello = TestPackets.tlsClientHello(serverName: "blocked.test", size: 1500)
        let partial = Self.segment(Array(hello[0..<100]), at: 0)
        try h.sendPacket(partial)
        // No name within the wait: decided without one (default allow), the held packet released.
        #expect(h.tun.waitWritten(count: 1) == [partial])
        #expect(h.engine.counters.count(.timeouts) == 1)
    }

    /// A DNS-over-TCP answer cut over two segments (RFC 7766) is reassembled and teaches the
    /// name (before, each piece counted as malformed and nothing was learned).
    @Test func dnsOverTCPAnswerSplitOverSegmentsTeachesTheName() throws {
        let h = try Self.harness()
        let resolver = "198.19.0.53"
        try h.sendPacket(TestPackets.tcp(from: Self.alice, 40100, to: resolver, 53, seq: 99, flags: Self.syn))
        #expect(h.tun.waitWritten(count: 1).count == 1)
        let answer = TestPackets.dnsResponse(name: "tracker.test", address: "198.19.0.77")
        let framed = [UInt8(answer.count >> 8), UInt8(answer.count & 0xFF)] + answer
        for (offset, piece) in [(0, Array(framed[0..<7])), (7, Array(framed[7...]))] {
            let seg = TestPackets.tcp(from: resolver, 53, to: Self.alice, 40100, seq: 5000 + UInt32(offset), ack: 100,
                                      flags: Self.psh, payload: piece)
            h.tun.inject(seg)
            #expect(try h.receivePacket() == seg)
        }
        #expect(h.engine.counters.count(.dnsAnswers) == 1)
        #expect(h.engine.counters.count(.dnsMalformed) == 0)
        try h.sendPacket(TestPackets.udp(from: Self.alice, 40054, to: "198.19.0.77", 9999))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 1)
    }

    @Test func dnsLearnedNameBlocksALaterFlow() throws {
        let h = try Self.harness()
        // alice asks the resolver; its answer for tracker.test comes back through the gateway.
        let query = TestPackets.udp(from: Self.alice, 40053, to: "198.19.0.53", 53, payload: [0x12, 0x34])
        try h.sendPacket(query)
        #expect(h.tun.waitWritten(count: 1) == [query])
        let answer = TestPackets.udp(from: "198.19.0.53", 53, to: Self.alice, 40053,
                                     payload: TestPackets.dnsResponse(name: "tracker.test", address: "198.19.0.77"))
        h.tun.inject(answer)
        #expect(try h.receivePacket() == answer)
        #expect(h.engine.counters.count(.dnsAnswers) == 1)
        // Plain TCP (no name in the payload) to the answered address: known by its DNS name.
        try Self.synThen(h, port: 5000, to: "198.19.0.77")
        try h.sendPacket(Self.segment(Array("hello\n".utf8), at: 0, port: 5000, to: "198.19.0.77"))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 1)
        // A UDP flow (no payload to read) to it is decided by the DNS name at once.
        try h.sendPacket(TestPackets.udp(from: Self.alice, 40054, to: "198.19.0.77", 9999))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 2)
        #expect(h.engine.counters.count(.pending) == 1)
    }

    @Test func flowsNoHostRuleCouldChangeNeverWait() throws {
        // No host rules at all.
        let plain = try Self.harness(EngineHarness.rules)
        try Self.synThen(plain)
        let data = Self.segment(Array("hello".utf8), at: 0)
        try plain.sendPacket(data)
        #expect(plain.tun.waitWritten(count: 1) == [data])
        #expect(plain.engine.counters.count(.pending) == 0)
        // Host rules, but an earlier rule decides this flow whatever its host.
        let h = try Self.harness("default allow\nallow proto tcp port 22\nblock host blocked.test\n")
        try Self.synThen(h, port: 22)
        let ssh = Self.segment(Array("SSH-2.0-x\r\n".utf8), at: 0, port: 22)
        try h.sendPacket(ssh)
        #expect(h.tun.waitWritten(count: 1) == [ssh])
        #expect(h.engine.counters.count(.pending) == 0)
    }

    /// `block host …` early, `block proto tcp port 25` later: every host gives port 25 block,
    /// so its SYN is dropped at once (no handshake completes only to hang in `HostWait`), and the
    /// flow is recorded with the port rule and no host — what `policy test` says without `host`.
    @Test func flowsEveryHostBlocksAreDecidedOnTheirFirstPacket() throws {
        let decisions = DecisionRecorder()
        let h = try EngineHarness(rules: """
            default allow
            default in block
            block host blocked.test, *.ads.test reason "ads"
            block proto tcp port 25 name no-smtp
            """) { $0.events = decisions }
        try h.handshake()
        try h.sendPacket(TestPackets.tcp(from: Self.alice, 40000, to: Self.server, 25, seq: 999, flags: Self.syn))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(h.engine.counters.count(.policyBlock) == 1)
        #expect(h.engine.counters.count(.pending) == 0)
        let smtp = try #require(decisions.calls.withLock { $0.first })
        #expect(smtp.action == .block && smtp.rule == "no-smtp" && smtp.host == nil)
        // Port 443 could still be allowed by its name: it waits as before.
        try Self.synThen(h, port: 443, sport: 40001)
        #expect(h.engine.counters.count(.pending) == 1)
    }

    @Test func exhaustedPendingRecordsAreCountedAndDecidedWithoutHost() throws {
        let h = try Self.harness { $0.hostPendingFlows = 1 }
        try Self.synThen(h, sport: 40000)
        // The only record is taken: the next flow is decided at once, without a host.
        try Self.synThen(h, sport: 40001)
        let blockedButUnread = Self.segment(TestPackets.tlsClientHello(serverName: "blocked.test", size: 300), at: 0,
                                            sport: 40001)
        try h.sendPacket(blockedButUnread)
        #expect(h.tun.waitWritten(count: 1) == [blockedButUnread])
        #expect(h.engine.counters.count(.pendingOverflow) == 1)
        #expect(h.engine.counters.count(.pending) == 1)
    }

    @Test func serverSpeakingFirstShowsTheFlowNamesNoHost() throws {
        let h = try Self.harness()
        try Self.synThen(h, port: 25)
        let banner = TestPackets.tcp(from: Self.server, 25, to: Self.alice, 40000, seq: 5000, ack: 1000, flags: Self.psh,
                                     payload: Array("220 mail\r\n".utf8))
        h.tun.inject(banner)
        #expect(try h.receivePacket() == banner)
        let data = Self.segment(Array("EHLO x\r\n".utf8), at: 0, port: 25)
        try h.sendPacket(data)
        #expect(h.tun.waitWritten(count: 1) == [data])
    }

    /// A reply that decides its pending flow `reject` (the server spoke first, no host to read):
    /// the server gets a RST answering it, and the peer, whose connection waits, a RST standing
    /// in for the reply (before: only the server was answered, the client hung until it timed out).
    @Test func rejectDecidedByAReplyResetsBothSides() throws {
        let h = try Self.harness("default allow\nallow host ok.test port 2525\nreject proto tcp port 2525\n")
        try Self.synThen(h, port: 2525)
        let banner = TestPackets.tcp(from: Self.server, 2525, to: Self.alice, 40000, seq: 5000, ack: 1000, flags: Self.psh,
                                     payload: Array("220 mail\r\n".utf8))
        h.tun.inject(banner)
        let toServer = try #require(h.tun.waitWritten(count: 1).first)
        let s = try toServer.withUnsafeBytes { try PacketParser.parse($0) }
        #expect(s.tcpFlags.contains(.rst) && s.destination == IPAddress(Self.server) && s.destinationPort == 2525)
        let toAlice = try #require(try h.receivePacket())
        let a = try toAlice.withUnsafeBytes { try PacketParser.parse($0) }
        #expect(a.tcpFlags.contains(.rst) && a.source == IPAddress(Self.server) && a.destination == IPAddress(Self.alice))
        #expect(a.sourcePort == 2525 && a.destinationPort == 40000 && a.tcpSequence == 5000)
        #expect(h.engine.counters.count(.policyReject) == 1)
    }

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }

    @Test func quicInitialSNIDecidesUDP443() throws {
        // RFC 9001 A.2's client Initial names example.com.
        let initial = TestPackets.udp(from: Self.alice, 40443, to: Self.server, 443, payload: Self.hex(QUICVectors.v1Packet))
        let blocked = try Self.harness("default allow\nblock host example.com\n")
        try blocked.sendPacket(initial)
        #expect(blocked.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(blocked.engine.counters.count(.learned) == 1)
        #expect(blocked.engine.counters.count(.policyBlock) == 1)
        let allowed = try Self.harness("default allow\nblock host other.test\n")
        try allowed.sendPacket(initial)
        #expect(allowed.tun.waitWritten(count: 1) == [initial])
    }

    @Test func unreadableQUICFollowsTheQUICSetting() throws {
        let notQUIC = TestPackets.udp(from: Self.alice, 40444, to: Self.server, 443, payload: Array("not quic".utf8))
        let inspect = try Self.harness("default allow\nblock host example.com\n")
        try inspect.sendPacket(notQUIC)
        #expect(inspect.tun.waitWritten(count: 1) == [notQUIC])
        let strict = try Self.harness("default allow\nblock host example.com\n") { $0.quic = .blockUnknown }
        try strict.sendPacket(notQUIC)
        #expect(strict.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(strict.engine.counters.count(.quicUnknownBlocked) == 1)
    }

    /// The live ring learns each flow's host once, when the flow is decided with it (`flow-host`
    /// records, `tunnelctl watch`), with the verdict it got.
    @Test func decidedHostsReachTheObserver() throws {
        let observer = FakeObserver()
        var options = GatewayOptions()
        options.hostPendingTimeoutMs = 5_000
        let h = try EngineHarness(rules: Self.rules, options: options) { $0.observer = observer }
        try h.handshake()
        let alice = try #require(h.engine.peer(named: "alice")).handle.rawValue
        try Self.synThen(h)
        let hello = Self.segment(TestPackets.tlsClientHello(serverName: "allowed.test", size: 400), at: 0)
        try h.sendPacket(hello)
        #expect(h.tun.waitWritten(count: 1) == [hello])
        try Self.synThen(h, sport: 40001)
        try h.sendPacket(Self.segment(TestPackets.tlsClientHello(serverName: "Blocked.Test", size: 400), at: 0, sport: 40001))
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        let hosts = observer.log.filter { $0.hasPrefix("host ") }
        #expect(hosts == ["host \(alice) allow allowed.test", "host \(alice) block blocked.test"])
    }

    // MARK: held packets are the peer's packets: metered and shaped when released

    /// SYN, then a ClientHello naming `name` in three segments: the first two are held, the third
    /// decides the flow and releases them.
    static func splitHello(_ name: String = "allowed.test") -> (syn: [UInt8], parts: [[UInt8]]) {
        let syn = TestPackets.tcp(from: alice, 40000, to: server, 443, seq: 999, flags: Self.syn)
        let hello = TestPackets.tlsClientHello(serverName: name, size: 1500)
        return (syn, [segment(Array(hello[0..<600]), at: 0), segment(Array(hello[600..<1200]), at: 600),
                      segment(Array(hello[1200...]), at: 1200)])
    }

    @Test func releasedPacketsCountAgainstTheQuota() throws {
        let h = try Self.harness()
        let handle = try #require(h.engine.peer(named: "alice")).handle
        // 100 bytes up: the SYN (40) fits, the first held segment crosses the quota (admitted: the
        // crossing packet goes, docs/limits.md), and nothing after it passes — held or not.
        let account = h.engine.quotas.arm(handle, window: 1, used: ByteUse(up: 0, down: 0),
                                          limits: PeerLimits(quotaUpBytes: 100))
        let (syn, parts) = Self.splitHello()
        try h.sendPacket(syn)
        #expect(h.tun.waitWritten(count: 1) == [syn])
        for p in parts { try h.sendPacket(p) }
        #expect(h.tun.waitWritten(count: 1) == [parts[0]])
        #expect(h.tun.waitWritten(count: 1, timeoutMilliseconds: 300).isEmpty)
        #expect(account.used.up == UInt64(syn.count + parts[0].count))
        #expect(account.isExhausted)
        #expect(h.engine.counters.count(.heldPackets) == 2)
        #expect(h.engine.counters.count(.quotaUsed) == 2)
    }

    @Test func releasedPacketsOfAShapedPeerWaitBehindItsQueue() throws {
        // 800 kbit/s up: a 3,200-byte burst passes, the rest waits in a FIFO that drains at
        // 100 kB/s. Twelve kilobytes of UDP queue first; the TCP flow's SYN and its held
        // ClientHello segments (released when the name is read) must come out after all of it,
        // in their order.
        var options = GatewayOptions()
        options.hostPendingTimeoutMs = 5_000
        let h = try EngineHarness(rules: Self.rules, aliceTier: .premium, options: options) { engine in
            let handle = engine.peer(named: "alice")!.handle
            _ = engine.registry.update(handle) { p in
                var own = p.limitSettings
                own.rateUp = .value(800_000)
                p.limitSettings = own
            }
        }
        try h.handshake()
        let udp = (0..<15).map { i in
            TestPackets.udp(from: Self.alice, 41000, to: Self.server, 5000,
                            payload: [UInt8(i)] + [UInt8](repeating: 0xAB, count: 971))
        }
        for p in udp { try h.sendPacket(p) }
        let (syn, parts) = Self.splitHello()
        try h.sendPacket(syn)
        for p in parts { try h.sendPacket(p) }
        var got: [[UInt8]] = []
        for _ in 0..<500 where got.count < 19 {
            got += h.tun.takeWritten()
            usleep(10_000)
        }
        #expect(got == udp + [syn] + parts)
        #expect(h.engine.counters.count(.heldPackets) == 2)
        #expect(h.engine.counters.count(.rateOverflowUp) == 0)
    }
}

/// Records each `flowDecided`: the action, the deciding rule's name (or "default") and the host.
final class DecisionRecorder: GatewayEvents {
    struct Call: Sendable { var action: Verdict; var rule: String; var host: String? }
    let calls = Mutex<[Call]>([])
    func flowDecided(_ d: FlowDecision) {
        let rule = d.verdict.isDefault ? "default" : d.policy.compiled.rules.name(Int(d.verdict.ruleIndex)) ?? "#\(d.verdict.ruleIndex)"
        calls.withLock { $0.append(Call(action: d.verdict.action, rule: rule, host: d.host)) }
    }
    func flowEnded(_ record: FlowRecord) {}
    func timerTick(flows: FlowTable, monoMs: Int64) {}
    func engineStopping(flows: FlowTable, monoMs: Int64) {}
}
