import Core
import Engine
import Runtime
import Sessions
import Daemon
import Store
import Synchronization
import Testing
import Foundation
import WireGuard

/// Two gateways' watchdogs over one shared store (issue 19): one window across gateways, the
/// pause honoured everywhere, quota use summed, tier changes shared, an outage reconciled.
@Suite struct SharedSyncTests {
    static let tiers = TierClasses(freeSessionMs: 20_000, freePauseMs: 30_000)
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 1_000)
    static let alice = PeerHandle(rawValue: 1)
    let t0: Int64 = 1_000_000

    final class Gateway: Sendable {
        let watchdog: Watchdog
        let device = FakeWatchdogDevice()
        let records = CaptureSink()
        let sync: SharedSync
        let quotas = QuotaMeter()
        final class Box: Sendable {
            let clock = Atomic<Int64>(0)
            let tiersApplied = Mutex<[SharedTierChange]>([])
            let logLines = Mutex<[String]>([])
        }
        let box = Box()

        init(_ name: String, _ store: MemorySharedState, quota: UInt64? = nil, journal: String? = nil, chunkRows: Int = 5_000) {
            var peer = GatewayPeer(handle: SharedSyncTests.alice, name: "alice", publicKey: PublicKey([UInt8](repeating: 1, count: 32))!, tier: .free)
            if let quota { peer.limitSettings.quota = .value(quota) }
            let peers = PeerRegistry([peer], tiers: TierClasses(freeSessionMs: SharedSyncTests.tiers.freeSessionMs, freePauseMs: SharedSyncTests.tiers.freePauseMs))
            let box = box
            let log = Logger(minimum: .info) { level, m in box.logLines.withLock { $0.append("<\(level.rawValue)>\(m)") } }
            sync = SharedSync(gateway: name, backend: "memory", log: log, quotas: quotas, handle: { peers.current.named($0)?.handle },
                              now: { box.clock.load(ordering: .relaxed) }, journalPath: journal, chunkRows: chunkRows,
                              connect: { try store.connect() })
            watchdog = Watchdog(config: SharedSyncTests.cfg, peers: peers, device: device, sink: SharedWindowSink(records, sync: sync), quotas: quotas)
            watchdog.setAuthority(sync)
            let w = watchdog
            sync.attach(adopt: { grants, now in w.adoptShared(grants, now: now) }, applyTiers: { c in box.tiersApplied.withLock { $0 += c } })
        }

        /// A connect at `now`: admitted and completed, or refused.
        func connect(at now: Int64) -> Bool {
            box.clock.store(now, ordering: .relaxed)
            var a = watchdog.decideInitiation(SharedSyncTests.alice, now: now)
            if a.decision == .later {
                // A window opening in the shared store is asked on the opener thread: the
                // client's retry finds it answered.
                watchdog.waitForWindowOpens()
                a = watchdog.decideInitiation(SharedSyncTests.alice, now: now)
            }
            watchdog.applyToDevice(a.actions)
            guard a.decision == .admit else { return false }
            return watchdog.handshakeCompleted(SharedSyncTests.alice, now: now)
        }

        func pass(at now: Int64) {
            box.clock.store(now, ordering: .relaxed)
            sync.pass()
            watchdog.tick(now: now)
        }

        var window: WindowDates? { watchdog.view("alice")?.window }
    }

    @Test func oneWindowAcrossGatewaysAndThePauseEverywhere() throws {
        let store = MemorySharedState()
        let a = Gateway("gw-a", store), b = Gateway("gw-b", store)
        a.pass(at: t0)
        b.pass(at: t0)  // both connected to the store
        #expect(a.connect(at: t0 + 1_000))
        let win = WindowDates(allowedUntil: t0 + 21_000, reconnectAt: t0 + 51_000)
        #expect(a.window == win)
        #expect(try store.connect().window(peer: "alice")?.dates == win)
        #expect(try store.connect().window(peer: "alice")?.gateway == "gw-a")
        // The client moves to gateway B inside the window: B resumes A's window, same end.
        #expect(b.connect(at: t0 + 5_000))
        #expect(b.window == win)
        #expect(try store.connect().window(peer: "alice")?.epoch == 1)
        // The window ends; the client tries B in the pause: refused there, until the pause ends.
        a.pass(at: t0 + 21_000)
        b.pass(at: t0 + 21_000)
        #expect(a.device.isRefused(SharedSyncTests.alice) && b.device.isRefused(SharedSyncTests.alice))
        #expect(!b.connect(at: t0 + 30_000))
        #expect(!b.connect(at: t0 + 50_999))
        #expect(b.connect(at: t0 + 51_000))
        #expect(try store.connect().window(peer: "alice")?.epoch == 2)
        #expect(try store.connect().window(peer: "alice")?.gateway == "gw-b")
        // A learns B's new window on its next pass.
        a.pass(at: t0 + 52_000)
        #expect(a.window == WindowDates(allowedUntil: t0 + 71_000, reconnectAt: t0 + 101_000))
        #expect(a.sync.health().sharedOpens == 1 && b.sync.health().sharedOpens == 2)
    }

    @Test func aPauseStartedElsewhereIsKnownBeforeTheClientArrives() throws {
        let store = MemorySharedState()
        let a = Gateway("gw-a", store), b = Gateway("gw-b", store)
        a.pass(at: t0)
        #expect(a.connect(at: t0))
        // B started later: its first pass reads the window, its tick refuses the peer in the pause.
        b.pass(at: t0 + 25_000)
        #expect(b.window == WindowDates(allowedUntil: t0 + 20_000, reconnectAt: t0 + 50_000))
        #expect(b.device.isRefused(SharedSyncTests.alice))
    }

    @Test func quotaUseIsSummedAcrossGateways() throws {
        let store = MemorySharedState()
        let a = Gateway("gw-a", store, quota: 10_000), b = Gateway("gw-b", store, quota: 10_000)
        a.pass(at: t0)
        b.pass(at: t0)
        #expect(a.connect(at: t0))
        #expect(b.connect(at: t0 + 100))  // same peer on both (two devices of one user, say)
        let win = try #require(a.window)
        // Each gateway's data path counts 3,000 bytes (the meter's atomic add, as a batch flush does).
        #expect(a.quotas.credit(SharedSyncTests.alice, window: win.allowedUntil, bytes: ByteUse(up: 1_000, down: 2_000)))
        #expect(b.quotas.credit(SharedSyncTests.alice, window: win.allowedUntil, bytes: ByteUse(up: 1_000, down: 2_000)))
        a.pass(at: t0 + 1_000)
        b.pass(at: t0 + 1_000)
        a.pass(at: t0 + 2_000)
        #expect(try store.connect().window(peer: "alice").map { $0.usedUp + $0.usedDown } == 6_000)
        #expect(a.quotas.account(SharedSyncTests.alice)?.used.total == 6_000)
        #expect(b.quotas.account(SharedSyncTests.alice)?.used.total == 6_000)
        // 4,500 more on B: the sum passes the quota; A ends the window on its next passes too.
        b.quotas.credit(SharedSyncTests.alice, window: win.allowedUntil, bytes: ByteUse(up: 0, down: 4_500))
        b.pass(at: t0 + 3_000)
        #expect(b.device.isRefused(SharedSyncTests.alice))
        b.pass(at: t0 + 3_100)  // B pushes the window it ended on its quota
        a.pass(at: t0 + 4_000)
        #expect(a.device.isRefused(SharedSyncTests.alice))
        let stored = try #require(try store.connect().window(peer: "alice"))
        #expect(stored.epoch == 1 && stored.dates.allowedUntil <= t0 + 3_100 && stored.usedUp + stored.usedDown == 10_500)
        #expect(a.window == stored.dates)
    }

    @Test func aWindowOpenedDuringAnOutageIsReconciledEarliestWins() throws {
        let store = MemorySharedState()
        let a = Gateway("gw-a", store), b = Gateway("gw-b", store)
        a.pass(at: t0)
        b.pass(at: t0)
        store.down = true
        // A cannot reach the store: it opens the window alone, and says so once.
        #expect(a.connect(at: t0 + 1_000))
        #expect(a.sync.health().localOpens == 1)
        a.pass(at: t0 + 1_500)
        #expect(a.sync.health().unavailableSinceMs != nil && a.sync.health().pending == 1)
        #expect(a.box.logLines.withLock { $0.filter { $0.contains("shared store (memory)") }.count } == 1)
        store.down = false
        // B opened one later (store back for B first): A's earlier window wins on reconcile.
        b.pass(at: t0 + 4_000)
        #expect(b.connect(at: t0 + 4_000))
        a.pass(at: t0 + 5_000)
        let stored = try #require(try store.connect().window(peer: "alice"))
        #expect(stored.gateway == "gw-a" && stored.dates == WindowDates(allowedUntil: t0 + 21_000, reconnectAt: t0 + 51_000))
        #expect(a.sync.health().unavailableSinceMs == nil && a.sync.health().pending == 0)
        b.pass(at: t0 + 6_000)
        #expect(b.window == stored.dates)
        #expect(a.box.logLines.withLock { $0.contains { $0.contains("reachable again") } })
    }

    @Test func tierChangesReachTheOtherGateways() throws {
        let store = MemorySharedState()
        let a = Gateway("gw-a", store), b = Gateway("gw-b", store)
        a.pass(at: t0)
        b.pass(at: t0)
        a.sync.localTier(peer: "alice", tier: .premium, at: t0 + 10)
        #expect(a.sync.health().pending == 1)
        a.pass(at: t0 + 1_000)
        b.pass(at: t0 + 1_000)
        #expect(b.box.tiersApplied.withLock { $0 } == [SharedTierChange(peer: "alice", tier: .premium, changedAt: t0 + 10)])
        a.sync.localTier(peer: "alice", tier: nil, at: t0 + 2_000)
        a.pass(at: t0 + 2_100)
        b.pass(at: t0 + 2_200)
        #expect(b.box.tiersApplied.withLock { $0.last } == SharedTierChange(peer: "alice", tier: nil, changedAt: t0 + 2_000))
    }

    @Test func theSyncThreadPassesEverySecondAndStops() throws {
        let store = MemorySharedState()
        let a = Gateway("gw-a", store)
        a.sync.start(adopt: { _, _ in }, applyTiers: { _ in })
        Thread.sleep(forTimeInterval: 3.5)
        let passes = a.sync.health().lastSyncAtMs != nil ? store.data.withLock { $0.calls } : 0
        a.sync.stop()  // returns: the thread ends after one last pass
        // Each pass reads windows and tiers (2 calls): the first at once, then one per second, so
        // more than the first pass and the final one (4 calls) ran while it was going.
        #expect(passes >= 6, "passes seen: \(passes / 2)")
        let after = store.data.withLock { $0.calls }
        Thread.sleep(forTimeInterval: 1.2)
        #expect(store.data.withLock { $0.calls } == after, "no pass after stop")
    }

    @Test func historyShipsFromTheLocalJournalExactlyOnceAcrossAnOutage() throws {
        let dir = NSTemporaryDirectory() + "tv-journal-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.db"
        let local = try StateStore(path: path)
        try local.setJournalTarget(gateway: "gw-a", at: t0)
        let store = MemorySharedState()
        let a = Gateway("gw-a", store, journal: path, chunkRows: 7)
        func flow(_ id: Int64) -> FlowOpen {
            FlowOpen(id: id, proto: 17, src: IPAddress(v4: 0x0A63_0002), srcPort: 5000, dst: IPAddress(v4: 0xC613_0001), dstPort: 53,
                     peer: "alice", host: nil, at: t0, verdict: .allow, rule: nil)
        }
        for id: Int64 in 1...10 { try local.insertFlow(flow(id)) }
        _ = try local.openSession(peer: "alice", at: t0)
        a.pass(at: t0 + 1_000)
        #expect(try store.connect().historyCounts(gateway: "gw-a") == HistoryCounts(flows: 10, sessions: 1))
        #expect(a.sync.health().journalDepth == 0 && a.sync.health().journalShipped == 11)

        // The database goes away: rows keep coming, journalled; status shows the depth.
        store.down = true
        for id: Int64 in 11...30 { try local.insertFlow(flow(id)) }
        try local.recordRefusal(.session(peer: "bob", windowEnd: t0, at: t0 + 2_000))
        _ = try local.closeSession(SessionClose(peer: "alice", at: t0 + 2_500, reason: .freeLimit, rxBytes: 5, txBytes: 6))
        a.pass(at: t0 + 3_000)
        #expect(a.sync.health().unavailableSinceMs == t0 + 3_000)
        #expect(try local.journalDepth() == 22)
        #expect(a.sync.health().journalDepth == 22, "status shows the journal growing during the outage")
        store.down = false
        a.pass(at: t0 + 4_000)
        let counts = try store.connect().historyCounts(gateway: "gw-a")
        #expect(counts == HistoryCounts(flows: 30, sessions: 1, refusals: 1))
        #expect(try local.journalDepth() == 0)
        #expect(a.sync.health().journalDepth == 0)
        #expect(store.data.withLock { $0.sessions["gw-a/1"]?.endReason } == .freeLimit)
        // Chunks of 7: the 22 changes went in 4 ship calls, in order, none twice.
        #expect(a.sync.health().journalShipped == 33)
    }
}
