import Core
import Daemon
import Engine
import Runtime
import Sessions
import Synchronization
import Testing
import WireGuard

/// The watchdog's events carry the facts of the decision that caused them: the tier in force
/// when the watchdog decided and the reason it decided — a quota pause's window-end says the
/// window's tier and `quota`, not `free` / `free-limit`; idle, expiry and disable say theirs.
@Suite struct WatchdogEventsTests {
    static let trial = PeerTier(rawValue: "trial")!
    static let t0: Int64 = 1_700_000_000_000
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 1_000)

    final class EventLog: Sendable {
        let events = Mutex<[DaemonEvent]>([])
    }

    struct Rig {
        let watchdog: Watchdog
        let peers: PeerRegistry
        let log: EventLog
        func handle(_ name: String) -> PeerHandle { peers.current.named(name)!.handle }
        func take() -> [DaemonEvent] { log.events.withLock { e in defer { e = [] }; return e } }
    }

    func rig() throws -> Rig {
        var trial = LimitSettings()
        try trial.set("Session", "1h")
        try trial.set("Quota", "1KiB")
        let tiers = TierClasses(freeSessionMs: 3_600_000, freePauseMs: 3_600_000, classes: [Self.trial: trial])
        let names: [(String, PeerTier)] = [("alice", .free), ("bob", .free), ("dave", .free), ("erin", .premium), ("frank", .free)]
        let peers = PeerRegistry(names.enumerated().map { i, p in
            GatewayPeer(handle: PeerHandle(rawValue: UInt32(i + 1)), name: p.0,
                        publicKey: PublicKey([UInt8](repeating: UInt8(i + 1), count: 32))!, tier: p.1)
        }, tiers: tiers, overrides: ["alice": PeerTierOverride(tier: Self.trial, origin: .admin, since: Self.t0 - 1)])
        let events = EventLog()
        let log = Logger(minimum: .debug, sink: { _, _ in }, events: { e in events.events.withLock { $0.append(e) } })
        let sink = WatchdogEvents(CaptureSink(), log: log, peers: peers)
        let w = Watchdog(config: Self.cfg, peers: peers, device: FakeWatchdogDevice(), sink: sink)
        return Rig(watchdog: w, peers: peers, log: events)
    }

    @Test func aQuotaPauseSaysItsTierAndReasonThroughout() throws {
        let r = try rig()
        let alice = r.handle("alice")
        #expect(r.watchdog.handshakeCompleted(alice, now: Self.t0))
        #expect(r.take() == [.sessionStart(peer: "alice", tier: Self.trial)])
        let w = try #require(r.watchdog.view("alice")?.window)
        #expect(r.watchdog.quotas.credit(alice, window: w.allowedUntil, bytes: ByteUse(up: 200, down: 1_000)))
        r.watchdog.tick(now: Self.t0 + 1_000)
        let reconnect = try #require(r.watchdog.view("alice")?.window?.reconnectAt)
        #expect(r.take() == [.sessionEnd(peer: "alice", tier: Self.trial, reason: .quota),
                             .windowEnd(peer: "alice", tier: Self.trial, reason: .quota, reconnectAtMs: reconnect)])
        // Its pause refuses it, once in the log, as a quota pause of its tier.
        #expect(!r.watchdog.admitInitiation(alice, now: Self.t0 + 2_000))
        r.watchdog.handshakeRefused(alice, now: Self.t0 + 2_000)
        r.watchdog.handshakeRefused(alice, now: Self.t0 + 7_000)
        #expect(r.take() == [.refusal(peer: "alice", tier: Self.trial, reason: "quota-pause")])
        // The journal lines say it in their fields.
        let line = DaemonEvent.windowEnd(peer: "alice", tier: Self.trial, reason: .quota, reconnectAtMs: reconnect).line
        #expect(line.contains("TUNNELVISION_EVENT=window-end PEER=alice TIER=trial REASON=quota RECONNECT_AT="), "\(line)")
    }

    @Test func aFreeWindowEndsFreeLimit() throws {
        let r = try rig()
        #expect(r.watchdog.handshakeCompleted(r.handle("frank"), now: Self.t0))
        _ = r.take()
        r.watchdog.tick(now: Self.t0 + 3_600_000)
        #expect(r.take() == [.sessionEnd(peer: "frank", tier: .free, reason: .freeLimit),
                             .windowEnd(peer: "frank", tier: .free, reason: .freeLimit, reconnectAtMs: Self.t0 + 7_200_000)])
    }

    @Test func idleExpiryAndDisableSayTheirReasonAndTier() throws {
        let r = try rig()
        for name in ["bob", "dave", "erin"] { #expect(r.watchdog.handshakeCompleted(r.handle(name), now: Self.t0)) }
        _ = r.take()
        // dave expires at t0 + 5 s; erin (premium) is disabled at t0 + 6 s; bob stays idle.
        r.watchdog.setRestrictions(["dave": .expires(at: Self.t0 + 5_000)], now: Self.t0 + 1_000)
        #expect(r.take().isEmpty)
        r.watchdog.tick(now: Self.t0 + 5_000)
        #expect(r.take() == [.sessionEnd(peer: "dave", tier: .free, reason: .expired)])
        #expect(!r.watchdog.admitInitiation(r.handle("dave"), now: Self.t0 + 5_500))
        #expect(r.take() == [.refusal(peer: "dave", tier: .free, reason: "expired")])
        r.watchdog.setRestrictions(["dave": .expires(at: Self.t0 + 5_000), "erin": .disabled], now: Self.t0 + 6_000)
        #expect(r.take() == [.sessionEnd(peer: "erin", tier: .premium, reason: .disabled)])
        #expect(!r.watchdog.admitInitiation(r.handle("erin"), now: Self.t0 + 6_500))
        #expect(r.take() == [.refusal(peer: "erin", tier: .premium, reason: "disabled")])
        r.watchdog.tick(now: Self.t0 + 180_000)
        #expect(r.take() == [.sessionEnd(peer: "bob", tier: .free, reason: .idle)])
    }

    /// The tier of an event is the one the decision was taken under, even when the registry
    /// changes right after (the record carries it; nothing is read back later).
    @Test func theTierIsTheDecisionsNotALaterOne() throws {
        let r = try rig()
        let alice = r.handle("alice")
        #expect(r.watchdog.handshakeCompleted(alice, now: Self.t0))
        let w = try #require(r.watchdog.view("alice")?.window)
        r.watchdog.quotas.credit(alice, window: w.allowedUntil, bytes: ByteUse(up: 0, down: 2_000))
        r.watchdog.tick(now: Self.t0 + 1_000)
        r.peers.setOverride("alice", nil)  // back to free after the pause began
        let events = r.take()
        #expect(events.contains(.windowEnd(peer: "alice", tier: Self.trial, reason: .quota,
                                           reconnectAtMs: r.watchdog.view("alice")?.window?.reconnectAt)), "\(events)")
        #expect(!events.contains { if case .windowEnd(_, .free, _, _) = $0 { return true } else { return false } })
    }
}
