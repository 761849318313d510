import Core
import Daemon
import Engine
import Glibc
import Runtime
import Sessions
import Synchronization
import Testing
import TestSupport
import WireGuard

/// A shared store's window authority that blocks until released (a slow database) and records
/// the name of every thread that calls it.
final class BlockingAuthority: WindowAuthority, @unchecked Sendable {
    // Safe: `open_` is read and written only with `lock` held; the rest are Mutex/Atomic.
    private let lock = ConditionLock()
    private var open_ = false
    let callers = Mutex<[String]>([])
    let calls = Atomic<Int>(0)
    let grant: @Sendable (String, WindowDates) -> SharedGrant?

    init(grant: @escaping @Sendable (String, WindowDates) -> SharedGrant? = { _, d in
        SharedGrant(dates: d, used: .zero, opened: true, gateway: "gw-test")
    }) {
        self.grant = grant
    }

    func release() {
        lock.withLock {
            open_ = true
            lock.broadcast()
        }
    }

    func open(peer: String, dates: WindowDates, now: Int64) -> SharedGrant? {
        callers.withLock { $0.append(BlockingAuthority.threadName()) }
        calls.add(1, ordering: .relaxed)
        lock.withLock { while !open_ { lock.wait() } }
        return grant(peer, dates)
    }

    /// The calling thread's name (what `WorkerThread` set; /proc/thread-self/comm).
    static func threadName() -> String {
        let fd = Glibc.open("/proc/thread-self/comm", O_RDONLY)
        guard fd >= 0 else { return "?" }
        defer { Glibc.close(fd) }
        var buf = [UInt8](repeating: 0, count: 32)
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return String(decoding: buf.prefix(max(0, n)).filter { $0 != 10 }, as: UTF8.self)
    }
}

/// A watchdog sink that notes which thread each record came from. Window writes and refusals
/// are store statements in the daemon (the window ledger); session opens and closes go to the
/// store writer's queue (no statement on the caller's thread).
final class ThreadRecordingSink: WatchdogSink, Sendable {
    let records = Mutex<[(WatchdogRecord, String)]>([])
    func record(_ r: WatchdogRecord) { records.withLock { $0.append((r, BlockingAuthority.threadName())) } }

    /// The threads that wrote windows or refusals.
    var statementThreads: Set<String> {
        records.withLock { rs in
            Set(rs.compactMap { r, thread in
                switch r {
                case .windowPut, .windowDeleted, .refused, .restricted: return thread
                default: return nil
                }
            })
        }
    }
    var count: Int { records.withLock { $0.count } }
}

/// No store statement on the handshake thread: a window that opens in the shared store
/// is asked on the opener thread; the peer's initiation waits unanswered meanwhile, other peers'
/// handshakes go on, and the waiting initiation is answered once the store has answered.
@Suite(.serialized) struct AdmissionOffThreadTests {
    static let tiers = TierClasses(freeSessionMs: 20_000, freePauseMs: 30_000)
    static let cfg = WatchdogConfig(idleMs: 180_000, intervalMs: 1_000)
    static let bobKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }

    /// At the watchdog: a slow store never stalls the caller, and it is called on another thread.
    @Test func decisionsNeverWaitOnTheStore() throws {
        let alice = PeerHandle(rawValue: 1), carol = PeerHandle(rawValue: 3)
        let peers = PeerRegistry([
            GatewayPeer(handle: alice, name: "alice", publicKey: PublicKey([UInt8](repeating: 1, count: 32))!, tier: .free),
            GatewayPeer(handle: carol, name: "carol", publicKey: PublicKey([UInt8](repeating: 3, count: 32))!, tier: .premium),
        ], tiers: Self.tiers)
        let device = FakeWatchdogDevice(), sink = CaptureSink()
        let w = Watchdog(config: Self.cfg, peers: peers, device: device, sink: sink)
        let store = BlockingAuthority()
        w.setAuthority(store)
        let t0: Int64 = 1_000_000
        let started = SystemClock().monotonicNanoseconds()
        #expect(w.decideInitiation(alice, now: t0).decision == .later)
        #expect(w.decideInitiation(alice, now: t0 + 5).decision == .later)  // still in flight: asked once
        #expect(w.decideInitiation(carol, now: t0 + 10) == .admit)          // another peer is not held up
        let elapsedMs = (SystemClock().monotonicNanoseconds() - started) / 1_000_000
        #expect(elapsedMs < 500, "decisions took \(elapsedMs) ms while the store was blocked")
        #expect(AdmissionOffThreadTests.waitFor { store.calls.load(ordering: .relaxed) == 1 })
        store.release()
        w.waitForWindowOpens()
        #expect(store.callers.withLock { $0 } == ["tv-window-open"])
        // The retry finds the store's window: admitted, and the session opens in it.
        #expect(w.decideInitiation(alice, now: t0 + 5_000) == .admit)
        #expect(w.completeHandshake(alice, now: t0 + 5_000) == .admit)
        #expect(w.view("alice")?.window == WindowDates(allowedUntil: t0 + 20_000, reconnectAt: t0 + 50_000))
        #expect(store.calls.load(ordering: .relaxed) == 1)
    }

    /// Through the engine: alice's initiation is parked while the store is slow (bob, premium,
    /// completes his handshake meanwhile); when the store answers, alice gets her response
    /// without retrying, and the store was never called on the handshake thread.
    @Test func theEngineParksTheInitiationAndAnswersItWhenTheStoreHas() throws {
        let store = BlockingAuthority()
        let sink = ThreadRecordingSink()
        var watchdog: Watchdog?
        let h = try EngineHarness { engine in
            let w = Watchdog(config: AdmissionOffThreadTests.cfg, peers: engine.registry, device: engine, sink: sink)
            w.setAuthority(store)
            engine.admission = WatchdogAdmission(w, time: WatchdogTime(clock: engine.clock))
            watchdog = w
        }
        defer { store.release() }
        let bob = try h.client(privateKey: Self.bobKey, address: IPAddress(v4: 0xC000_0203))
        h.engine.addPeer(name: "bob", publicKey: bob.publicKey, presharedKey: nil,
                         allowedIPs: [IPPrefix("10.99.0.3/32")!], endpoint: nil, persistentKeepalive: 0, tier: .premium)

        try h.alice.sendInitiation()
        #expect(Self.waitFor { store.calls.load(ordering: .relaxed) == 1 })
        #expect(try h.receiveFromGateway(timeout: 200) == nil, "alice waits while the store is slow")
        try bob.handshake()  // the handshake thread is free: bob is answered at once

        store.release()
        let response = try #require(try h.receiveFromGateway(timeout: 3_000), "alice's parked initiation was answered")
        #expect(h.alice.receive(response) == .handshakeComplete(peer: h.alice.gatewayPeer))
        #expect(store.callers.withLock { $0 } == ["tv-window-open"])
        #expect(watchdog?.view("alice")?.window != nil)
        #expect(watchdog?.view("alice")?.session != nil)
        #expect(sink.statementThreads == ["tv-window-open"])
    }

    /// Without a shared store too: a window opens on the opener thread (written there, before the
    /// handshake is answered), and a refusal in the pause is recorded there; the handshake thread
    /// writes neither.
    @Test func windowsAndRefusalsAreWrittenOffTheHandshakeThread() throws {
        for paused in [false, true] {
            let sink = ThreadRecordingSink()
            var watchdog: Watchdog?
            let now = SystemClock().wallMilliseconds()
            let stored = paused ? ["alice": WindowDates(allowedUntil: now - 1_000, reconnectAt: now + 600_000)] : [:]
            let h = try EngineHarness { engine in
                let w = Watchdog(config: AdmissionOffThreadTests.cfg, peers: engine.registry, device: engine, sink: sink, windows: stored)
                engine.admission = WatchdogAdmission(w, time: WatchdogTime(clock: engine.clock))
                watchdog = w
            }
            let w = try #require(watchdog)
            if paused {
                try h.alice.sendInitiation()
                #expect(try h.receiveFromGateway(timeout: 300) == nil, "refused in the pause")
                #expect(Self.waitFor { sink.count > 0 })
                w.waitForWindowOpens()
                #expect(h.engine.counters.count(.peerRefused) == 1)
                #expect(sink.records.withLock { $0.contains { if case .refused = $0.0 { true } else { false } } })
            } else {
                try h.handshake()  // answered once the window is open (parked for a few ms meanwhile)
                #expect(w.view("alice")?.window != nil && w.view("alice")?.session != nil)
            }
            #expect(sink.statementThreads == ["tv-window-open"], "\(sink.records.withLock { $0.map { "\($0.0) on \($0.1)" } })")
        }
    }

    static func waitFor(timeoutMs: Int = 3_000, _ condition: () -> Bool) -> Bool {
        let deadline = SystemClock().monotonicNanoseconds() + UInt64(timeoutMs) * 1_000_000
        while !condition() {
            if SystemClock().monotonicNanoseconds() > deadline { return false }
            Sys.sleep(milliseconds: 2)
        }
        return true
    }
}
