import Core
import Engine
import Sessions
import Config
import Daemon
import Store
import Synchronization
import Testing
import WireGuard

/// The stateful watchdog over a fake device: refusal, session rows, markers, tier changes in
/// every state, restart with stored windows.
final class FakeWatchdogDevice: WatchdogDevice, Sendable {
    let refused = Mutex<Set<UInt32>>([])
    let ended = Mutex<[UInt32]>([])
    let bytes = Mutex<[UInt32: (UInt64, UInt64)]>([:])
    func setRefused(_ peer: PeerHandle, _ r: Bool) {
        refused.withLock { if r { $0.insert(peer.rawValue) } else { $0.remove(peer.rawValue) } }
    }
    func endSession(_ peer: PeerHandle) { ended.withLock { $0.append(peer.rawValue) } }
    func byteCounts(_ peer: PeerHandle) -> (rx: UInt64, tx: UInt64) { bytes.withLock { $0[peer.rawValue] ?? (0, 0) } }
    func isRefused(_ h: PeerHandle) -> Bool { refused.withLock { $0.contains(h.rawValue) } }
}

final class CaptureSink: WatchdogSink, Sendable {
    let records = Mutex<[WatchdogRecord]>([])
    func record(_ r: WatchdogRecord) { records.withLock { $0.append(r) } }
    func take() -> [WatchdogRecord] { records.withLock { r in defer { r = [] }; return r } }
}

extension Watchdog {
    /// Test shorthand for a tier change: the overrides go to the registry (their one owner),
    /// then the watchdog applies the new tiers at once.
    func setOverrides(_ overrides: [String: PeerTier], now: Int64) {
        peers.setOverrides(overrides.mapValues { PeerTierOverride(tier: $0, origin: .admin, since: now) })
        tiersChanged(now: now)
    }
}

@Suite struct WatchdogTests {
    static let tiers = TierClasses(freeSessionMs: 20_000, freePauseMs: 30_000)
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 1_000)
    let alice = PeerHandle(rawValue: 1)
    let bob = PeerHandle(rawValue: 2)
    let t0: Int64 = 1_000_000

    func make(windows: [String: WindowDates] = [:], overrides: [String: PeerTier] = [:])
        -> (Watchdog, FakeWatchdogDevice, CaptureSink)
    {
        let dev = FakeWatchdogDevice(), sink = CaptureSink()
        let peers = PeerRegistry([
            GatewayPeer(handle: alice, name: "alice", publicKey: PublicKey([UInt8](repeating: 1, count: 32))!, tier: .free),
            GatewayPeer(handle: bob, name: "bob", publicKey: PublicKey([UInt8](repeating: 2, count: 32))!, tier: .premium),
        ], tiers: TierClasses(freeSessionMs: Self.tiers.freeSessionMs, freePauseMs: Self.tiers.freePauseMs),
           overrides: overrides.mapValues { PeerTierOverride(tier: $0, origin: .admin, since: 0) })
        let w = Watchdog(config: Self.cfg, peers: peers, device: dev, sink: sink, windows: windows)
        peers.onChange { [w, t0] old, new in w.peersChanged(from: old, to: new, now: t0 + 100) }
        return (w, dev, sink)
    }

    @Test func windowThenPauseThenNewWindow() {
        let (w, dev, sink) = make()
        #expect(w.handshakeCompleted(alice, now: t0))
        let win = WindowDates(allowedUntil: t0 + 20_000, reconnectAt: t0 + 50_000)
        #expect(sink.take() == [.windowPut(peer: "alice", win, opened: true), .sessionOpened(peer: "alice", at: t0)])
        // A rekey inside the window is not a new connect.
        #expect(w.handshakeCompleted(alice, now: t0 + 10_000))
        #expect(sink.take().isEmpty)
        w.tick(now: t0 + 19_999)
        #expect(!dev.isRefused(alice) && sink.take().isEmpty)
        dev.bytes.withLock { $0[1] = (5000, 7000) }
        w.tick(now: t0 + 20_000)
        #expect(dev.isRefused(alice))
        #expect(dev.ended.withLock { $0 }.contains(1))
        let r = sink.take()
        #expect(r.first == .sessionClosed(peer: "alice", at: t0 + 20_000, reason: .freeLimit, rx: 5000, tx: 7000))
        #expect(r.contains { if case .marker(_, let label, _) = $0 { label.contains("alice") && label.contains("free-limit") } else { false } })
        // Retries during the pause: one refusal record each, all keyed by the window's end.
        w.handshakeRefused(alice, now: t0 + 25_000)
        w.handshakeRefused(alice, now: t0 + 30_000)
        #expect(sink.take() == [.refused(peer: "alice", windowEnd: t0 + 20_000, at: t0 + 25_000),
                                .refused(peer: "alice", windowEnd: t0 + 20_000, at: t0 + 30_000)])
        // Premium bob is never touched.
        #expect(w.handshakeCompleted(bob, now: t0 + 30_000))
        #expect(sink.take() == [.sessionOpened(peer: "bob", at: t0 + 30_000)])
        w.tick(now: t0 + 49_999)
        #expect(dev.isRefused(alice) && !dev.isRefused(bob))
        w.tick(now: t0 + 50_000)
        #expect(!dev.isRefused(alice))
        #expect(w.handshakeCompleted(alice, now: t0 + 51_000))
        #expect(sink.take().first == .windowPut(peer: "alice", WindowDates(allowedUntil: t0 + 71_000, reconnectAt: t0 + 101_000), opened: true))
    }

    /// The live ring's refusal events carry why (`tunnelctl watch`: `reason free-pause`).
    @Test func refusalCodeSaysWhy() {
        let (w, _, _) = make()
        #expect(w.refusalCode(alice, now: t0) == .unknown)  // nothing refuses her yet
        #expect(w.handshakeCompleted(alice, now: t0))
        w.tick(now: t0 + 20_000)
        #expect(w.refusalCode(alice, now: t0 + 21_000) == .freePause)
        #expect(w.refusalCode(alice, now: t0 + 50_000) == .unknown)  // the pause is over
        #expect(w.refusalCode(bob, now: t0) == .unknown)
        w.setRestrictions(["bob": .disabled, "alice": .expires(at: t0 + 22_000)], now: t0 + 21_000)
        #expect(w.refusalCode(bob, now: t0 + 21_000) == .disabled)
        #expect(w.refusalCode(alice, now: t0 + 21_000) == .freePause)  // not expired yet: still her pause
        #expect(w.refusalCode(alice, now: t0 + 22_000) == .expired)  // expiry wins over the pause
        #expect(WatchdogRules.PauseReason.quota.refusalCode == .quotaPause)
        #expect(RefusalCode.allCases.map(\.name) == ["refused", "free-pause", "quota-pause", "disabled", "expired"])
        #expect(RefusalCode.name(ofRaw: 99) == "code 99")
    }

    @Test func reconnectInsideTheWindowKeepsItsEnd() {
        let (w, _, sink) = make()
        _ = w.handshakeCompleted(alice, now: t0)
        w.kicked(alice, now: t0 + 5_000)
        _ = sink.take()
        #expect(w.handshakeCompleted(alice, now: t0 + 6_000))
        #expect(sink.take() == [.sessionOpened(peer: "alice", at: t0 + 6_000)])  // no new window
        #expect(w.view("alice")?.window == WindowDates(allowedUntil: t0 + 20_000, reconnectAt: t0 + 50_000))
    }

    @Test func handshakeBetweenTicksAfterTheEndIsRefused() {
        let (w, dev, sink) = make()
        _ = w.handshakeCompleted(alice, now: t0)
        _ = sink.take()
        // The window ended but no tick ran yet: the rekey is refused and the session ends.
        #expect(!w.handshakeCompleted(alice, now: t0 + 20_500))
        #expect(dev.isRefused(alice))
        #expect(sink.take().first == .sessionClosed(peer: "alice", at: t0 + 20_500, reason: .freeLimit, rx: 0, tx: 0))
        // A new connect attempt inside the pause: refused and recorded.
        #expect(!w.handshakeCompleted(alice, now: t0 + 21_000))
        #expect(sink.take() == [.refused(peer: "alice", windowEnd: t0 + 20_000, at: t0 + 21_000)])
    }

    @Test func restartRefusesPeersInTheirPauseAndKeepsWindows() {
        let win = WindowDates(allowedUntil: t0 - 1_000, reconnectAt: t0 + 29_000)
        let (w, dev, sink) = make(windows: ["alice": win])
        w.tick(now: t0)
        #expect(dev.isRefused(alice))
        #expect(!w.handshakeCompleted(alice, now: t0 + 1))
        _ = sink.take()
        // Inside a stored window: resumed, not renewed.
        let inside = WindowDates(allowedUntil: t0 + 7_000, reconnectAt: t0 + 37_000)
        let (w2, dev2, sink2) = make(windows: ["alice": inside])
        w2.tick(now: t0)
        #expect(!dev2.isRefused(alice))
        #expect(w2.handshakeCompleted(alice, now: t0 + 10))
        #expect(sink2.take() == [.sessionOpened(peer: "alice", at: t0 + 10)])
        w2.tick(now: t0 + 7_000)
        #expect(dev2.isRefused(alice))
    }

    // §6.5 tier changes in every state (docs/session.md, "Tier changes": the window is kept).
    @Test func toPremiumMidPauseLetsThePeerInAtOnceAndBackToFreeKeepsThePause() {
        let paused = WindowDates(allowedUntil: t0 - 1, reconnectAt: t0 + 30_000)
        let (w, dev, sink) = make(windows: ["alice": paused])
        w.tick(now: t0)
        #expect(dev.isRefused(alice))
        _ = sink.take()
        w.setOverrides(["alice": .premium], now: t0 + 1)
        #expect(!dev.isRefused(alice))
        #expect(sink.take().isEmpty, "the window is not deleted")
        #expect(w.handshakeCompleted(alice, now: t0 + 2))
        #expect(w.view("alice")?.window == paused)
        #expect(sink.take() == [.sessionOpened(peer: "alice", at: t0 + 2)])
        // Back to free inside the same pause (the quick flip of the issue): the pause holds, the
        // live session ends, no fresh window.
        w.setOverrides([:], now: t0 + 3)
        #expect(dev.isRefused(alice))
        let records = sink.take()
        #expect(!records.contains { if case .windowPut = $0 { return true } else { return false } }, "\(records)")
        #expect(records.first == .sessionClosed(peer: "alice", at: t0 + 3, reason: .freeLimit, rx: 0, tx: 0))
        #expect(!w.admitInitiation(alice, now: t0 + 4))
        #expect(w.view("alice")?.window == paused)
    }

    @Test func toPremiumMidWindowAndBackToFreeAfterItEnded() {
        let (w, dev, sink) = make()
        _ = w.handshakeCompleted(alice, now: t0)
        w.setOverrides(["alice": .premium], now: t0 + 1_000)
        _ = sink.take()
        w.tick(now: t0 + 25_000)  // past the old window: nothing happens while premium
        #expect(!dev.isRefused(alice) && sink.take().isEmpty)
        // Back to free while connected, in the old window's pause: that pause applies.
        w.setOverrides([:], now: t0 + 26_000)
        #expect(sink.take().first == .sessionClosed(peer: "alice", at: t0 + 26_000, reason: .freeLimit, rx: 0, tx: 0))
        #expect(dev.isRefused(alice))
        // After the pause a fresh window opens as usual.
        w.tick(now: t0 + 50_000)
        #expect(!dev.isRefused(alice))
        #expect(w.handshakeCompleted(alice, now: t0 + 50_001))
        #expect(sink.take().contains(.windowPut(peer: "alice", WindowDates(allowedUntil: t0 + 70_001, reconnectAt: t0 + 100_001), opened: true)))
    }

    /// A wall-clock step moves every window and live session with it (the remaining real time is
    /// unchanged), stores the moved windows and leaves a marker.
    @Test func clockStepMovesWindowsAndSessions() {
        let (w, dev, sink) = make()
        #expect(w.handshakeCompleted(alice, now: t0))
        _ = sink.take()
        let hour: Int64 = 3_600_000
        w.clockStepped(by: -hour, now: t0 + 5_000 - hour)
        let moved = WindowDates(allowedUntil: t0 + 20_000 - hour, reconnectAt: t0 + 50_000 - hour)
        let records = sink.take()
        #expect(records.first == .windowPut(peer: "alice", moved))
        #expect(records.contains { if case .marker(_, let label, _) = $0 { return label.contains("stepped -1h") } else { return false } })
        // 14 s later on the new clock: still inside the window (6 s of real time left); at 15 s it ends.
        w.tick(now: t0 + 19_000 - hour)
        #expect(!dev.isRefused(alice) && w.view("alice")?.session != nil)
        w.tick(now: t0 + 20_000 - hour)
        #expect(dev.isRefused(alice) && w.view("alice")?.session == nil)
        // And the pause lasts its real 30 s on the new clock.
        #expect(!w.admitInitiation(alice, now: t0 + 49_999 - hour))
        #expect(w.admitInitiation(alice, now: t0 + 50_000 - hour))
    }

    /// Checked at arrival: the first initiation after `reconnect_at` is admitted at once (the
    /// device's refusal from the pause is lifted), one inside the pause is refused at once.
    @Test func admissionAtArrivalAtTheEndOfThePause() {
        let (w, dev, _) = make(windows: ["alice": WindowDates(allowedUntil: t0 - 1, reconnectAt: t0 + 30_000)])
        w.tick(now: t0)
        #expect(dev.isRefused(alice))
        #expect(!w.admitInitiation(alice, now: t0 + 29_999))
        #expect(dev.isRefused(alice))
        #expect(w.admitInitiation(alice, now: t0 + 30_050))
        #expect(!dev.isRefused(alice), "un-refused at arrival, not at the next tick")
    }

    @Test func toFreeWhileDisconnectedOpensOnNextConnect() {
        let (w, dev, sink) = make()
        w.setOverrides(["bob": .free], now: t0)
        #expect(sink.take().isEmpty && !dev.isRefused(bob))
        #expect(w.handshakeCompleted(bob, now: t0 + 5))
        #expect(sink.take().first == .windowPut(peer: "bob", WindowDates(allowedUntil: t0 + 20_005, reconnectAt: t0 + 50_005), opened: true))
        // Premium peer with an override back: unlimited again; idle still ends sessions.
        w.setOverrides([:], now: t0 + 6)
        _ = sink.take()
        w.tick(now: t0 + 6 + 180_000)
        #expect(sink.take().first == .sessionClosed(peer: "bob", at: t0 + 180_006, reason: .idle, rx: 0, tx: 0))
    }

    @Test func removedAndShutdown() {
        let (w, _, sink) = make()
        _ = w.handshakeCompleted(alice, now: t0)
        _ = w.handshakeCompleted(bob, now: t0)
        _ = sink.take()
        w.peers.remove(alice)
        #expect(sink.take() == [.sessionClosed(peer: "alice", at: t0 + 100, reason: .removed, rx: 0, tx: 0)])
        w.shutdown(now: t0 + 200)
        #expect(sink.take() == [.sessionClosed(peer: "bob", at: t0 + 200, reason: .shutdown, rx: 0, tx: 0)])
    }
}
