import Config
import ControlProtocol
import Core
@testable import Daemon
@testable import Engine
import Foundation
import LiveFeed
import Packet
import Runtime
import Store
import SystemIO
import Testing
import TestSupport
import WireGuard

/// The engine over fakes with the daemon's own wiring around it: `SessionService` (store in a
/// temporary state directory, history, the watchdog as handshake admission) and a
/// `PacketObserver` on a live ring with a consumer attached (`tunnelctl watch`). No root.
final class DaemonHarness: @unchecked Sendable {
    // Safe: used from the test's thread only; the engine and the service have their own threads.
    let base: EngineHarness
    let sessions: SessionService
    let observer: PacketObserver
    let consumer: RingConsumer
    let dir: String
    /// Keep the state directory when the harness goes (a test restarts on it).
    var keep = false
    var engine: GatewayEngine { base.engine }
    var storePath: String { dir + "/state/state.db" }

    /// `windows`: stored before the daemon starts. `peers` run after `alice` is added, before start.
    init(windows: [SessionWindow] = [], reusing existing: String? = nil, peers: (GatewayEngine) throws -> Void = { _ in },
         shared: (@Sendable () throws -> any SharedState)? = nil, gateway: String = "") throws {
        let dir = existing ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("tv-daemon-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        var iface = InterfaceConfig()
        iface.stateDirectory = dir + "/state"
        iface.runtimeDirectory = dir + "/run"
        for d in [iface.stateDirectory, iface.runtimeDirectory] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
        if !windows.isEmpty {
            let store = try StateStore(path: iface.storePath)
            for w in windows { try store.putWindow(w) }
        }
        let ring = try RingProducer(directory: iface.runtimeDirectory, slotCount: 1024)
        let consumer = try RingConsumer(path: ring.path)
        var made: (SessionService, PacketObserver)?
        base = try EngineHarness { engine in
            try peers(engine)
            let sessions = SessionService(engine: engine, interface: iface, log: engine.log, shared: shared, gateway: gateway, backend: "memory")
            let observer = PacketObserver(ring: ring, capture: nil, flowCapacity: engine.options.flowCapacity,
                                          peers: engine.registry)
            engine.observer = observer
            made = (sessions, observer)
        }
        guard let made else { throw HarnessError("not wired") }
        (sessions, observer) = made
        self.consumer = consumer
        self.dir = dir
    }

    deinit {
        base.engine.stop()
        sessions.stop()
        observer.close()
        if !keep { try? FileManager.default.removeItem(atPath: dir) }
    }

    /// Ring records until `done` holds for what arrived so far (or 2 s passed).
    func records(until done: ([LiveRecord]) -> Bool) -> [LiveRecord] {
        var out: [LiveRecord] = []
        let deadline = Date().addingTimeInterval(2)
        while !done(out) && Date() < deadline {
            _ = consumer.wait(timeoutNanoseconds: 50_000_000)
            out += consumer.read()
        }
        return out
    }

    /// The store as tunnelctl reads it, after the writer drained.
    func store() throws -> StateStore {
        sessions.history.writer?.flush()
        return try StateStore(path: storePath, mode: .readOnly)
    }
}

@Suite(.serialized) struct DaemonWiringTests {
    static let bobKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
    static let carolKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 9) }

    /// docs/session.md: a free peer in its pause. Its initiation is refused before the device
    /// builds anything: no response datagram, no keys, no handshake on the live ring (a refusal
    /// instead), a refusal row; the watchdog refuses it from then on. A premium peer at the same
    /// time is admitted: response, handshake record, session row.
    @Test func pausedPeerGetsNoResponseNoHandshakeAdmittedPeerDoes() throws {
        let now = SystemClock().wallMilliseconds()
        let paused = SessionWindow(peer: "alice", allowedUntil: now - 60_000, reconnectAt: now + 3_600_000)
        let h = try DaemonHarness(windows: [paused]) { engine in
            let bob = try #require(WireGuardDevice(privateKey: Self.bobKey)).publicKey
            engine.addPeer(name: "bob", publicKey: bob, presharedKey: nil, allowedIPs: [IPPrefix("10.99.0.3/32")!],
                           endpoint: nil, persistentKeepalive: 0, tier: .premium)
        }
        // The watchdog has not ticked yet (the service's ticker is not started): the device does
        // not refuse alice on its own; only the admission can.
        let aliceHandle = try #require(h.engine.peer(named: "alice")).handle
        #expect(h.engine.device.status(of: aliceHandle)?.refused == false)

        try h.base.alice.sendInitiation()
        #expect(try h.base.alice.receiveFromGateway(timeout: 500) == nil, "no response datagram")
        #expect(h.engine.counters.count(.peerRefused) == 1)
        let aliceStatus = try #require(h.engine.device.status(of: aliceHandle))
        #expect(aliceStatus.refused && !aliceStatus.hasCurrentKeypair && aliceStatus.endpoint == nil)
        #expect(h.sessions.watchdog.view("alice")?.refused == true)
        #expect(h.sessions.watchdog.view("alice")?.session == nil)

        // bob, premium, is admitted (a client of its own on the harness's network).
        try h.base.client(privateKey: Self.bobKey, address: IPAddress(v4: 0xC000_0203)).handshake()
        let records = h.records { rs in rs.contains { $0.kind == .handshake && $0.peerName.description == "bob" } }
        #expect(records.contains { $0.kind == .handshake && $0.peerName.description == "bob" })
        #expect(!records.contains { $0.kind == .handshake && $0.peerName.description == "alice" })
        #expect(records.contains { $0.kind == .refusal && $0.peerName.description == "alice" })

        let store = try h.store()
        let refusals = try store.refusals(peer: "alice")
        #expect(refusals.count == 1 && refusals.first?.kind == .session && refusals.first?.count == 1)
        #expect(try store.sessions(peer: "alice").isEmpty)
        #expect(try store.sessions(peer: "bob").count == 1)
    }

    /// A free peer without a window is admitted, and its window opens when the handshake completes.
    @Test func freePeerWithoutWindowIsAdmittedAndItsWindowOpens() throws {
        let h = try DaemonHarness()
        try h.base.handshake()
        let records = h.records { rs in rs.contains { $0.kind == .handshake } }
        #expect(records.contains { $0.kind == .handshake && $0.peerName.description == "alice" })
        #expect(h.engine.counters.count(.peerRefused) == 0)
        #expect(h.sessions.watchdog.view("alice")?.window != nil)
        #expect(try h.store().sessions(peer: "alice").count == 1)
    }

    /// A peer added over the UAPI (`wg set tv0 peer KEY allowed-ips …`) is named once, in the
    /// registry, and every reader shows that name: the control server's peers, the UAPI's get,
    /// the watchdog, history's flow and session rows, the live flows, and the live ring.
    @Test func peerAddedOverUAPIShowsItsNameEverywhere() throws {
        let h = try DaemonHarness()
        let carol = try h.base.client(privateKey: Self.carolKey, address: IPAddress(v4: 0xC000_0204))
        var set = UAPISetRequest()
        var update = UAPIPeerUpdate(publicKey: try #require(WireGuardKey(bytes: carol.publicKey.bytes)))
        update.allowedIPs = [IPPrefix("10.99.0.4/32")!]
        set.peers = [update]
        #expect(h.engine.uapiSet(set, listenPort: h.base.gwBind.port) == nil)

        let entry = try #require(h.engine.registry.current.peer(publicKey: carol.publicKey))
        let name = entry.name
        #expect(name == "peer-" + String(carol.publicKey.base64.prefix(8)).replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-"))
        #expect(entry.origin == .runtime && entry.tier == .free && entry.allowedIPs == [IPPrefix("10.99.0.4/32")!])

        try carol.handshake()
        let out = TestPackets.udp(from: "10.99.0.4", 41000, to: "198.19.0.2", 53)
        try carol.sendPacket(out)
        #expect(h.base.tun.waitWritten(count: 1) == [out])

        // The live ring (tunnelctl watch): handshake and packet records carry the name.
        let records = h.records { rs in rs.contains { $0.kind == .packet } }
        #expect(records.contains { $0.kind == .handshake && $0.peerName.description == name })
        let packets = records.filter { $0.kind == .packet }
        #expect(!packets.isEmpty && packets.allSatisfy { $0.peerName.description == name })
        // The control server (tunnelctl peers), with the watchdog's annotations, and the UAPI get.
        let statuses = h.sessions.annotate(h.engine.peerStatuses())
        #expect(statuses.map(\.name).sorted() == ["alice", name])
        #expect(statuses.first { $0.name == name }?.session == .connected)
        let uapi = h.engine.uapiSnapshot(privateKey: nil, listenPort: h.base.gwBind.port)
        #expect(uapi.peers.contains { $0.publicKey.bytes == carol.publicKey.bytes && $0.allowedIPs == entry.allowedIPs })
        // The watchdog opened its session under that name; live flows name it (tunnelctl explain).
        #expect(h.sessions.watchdog.view(name)?.session != nil)
        #expect(h.sessions.liveFlows(peer: name).count == 1)
        // History: the flow row and the session row.
        let store = try h.store()
        #expect(try store.flows(peer: name).count == 1)
        #expect(try store.sessions(peer: name).count == 1)
    }
}

/// Session-limit integrity with the daemon's wiring (docs/session.md): handshakes decided at
/// arrival, and tier changes owned by the daemon.
@Suite(.serialized) struct SessionIntegrityTests {
    /// A handshake 50 ms after `reconnect_at` is answered at once, not at the next watchdog tick
    /// (the ticker is not even running here): the admission lifts the pause's refusal.
    @Test func handshakeJustAfterReconnectAtIsAnsweredAtOnce() throws {
        let now = SystemClock().wallMilliseconds()
        let window = SessionWindow(peer: "alice", allowedUntil: now - 60_000, reconnectAt: now + 400)
        let h = try DaemonHarness(windows: [window])
        h.sessions.watchdog.tick(now: h.sessions.time.now())
        let alice = try #require(h.engine.peer(named: "alice")).handle
        #expect(h.engine.device.status(of: alice)?.refused == true, "paused")
        // Inside the pause: refused at once, and counted.
        try h.base.alice.sendInitiation()
        #expect(try h.base.alice.receiveFromGateway(timeout: 200) == nil)
        #expect(h.engine.counters.count(.peerRefused) == 1)
        // reconnect_at + 50 ms: answered within 0.5 s.
        while SystemClock().wallMilliseconds() < now + 450 { usleep(5_000) }
        let sent = SystemClock().monotonicNanoseconds()
        let client = try h.base.client(privateKey: EngineHarness.clientKey, address: IPAddress(v4: 0xC000_0202))
        try client.handshake()
        let tookMs = (SystemClock().monotonicNanoseconds() - sent) / 1_000_000
        #expect(tookMs < 500, "answered after \(tookMs) ms")
        #expect(h.engine.device.status(of: alice)?.refused == false)
        #expect(h.sessions.watchdog.view("alice")?.window?.allowedUntil ?? 0 > now, "a new window opened")
        // The new window is in the store before the handshake returned (no queue involved).
        let row = try StateStore(path: h.storePath, mode: .readOnly).window(peer: "alice")
        #expect(row?.allowedUntil == h.sessions.watchdog.view("alice")?.window?.allowedUntil)
    }

    /// The running ticker moves the heartbeat every second (issue 13: crash recovery closes
    /// sessions and flows at most ~1 s before a crash), whatever the WatchdogInterval.
    @Test func theTickerBeatsEverySecond() throws {
        let h = try DaemonHarness()
        try h.sessions.start()
        let store = try StateStore(path: h.storePath, mode: .readOnly)
        var beats: Set<Int64> = []
        let deadline = SystemClock().monotonicNanoseconds() + 4_000_000_000
        while beats.count < 3 && SystemClock().monotonicNanoseconds() < deadline {
            h.sessions.history.writer?.flush()
            if let hb = try store.daemonState()?.heartbeatAt { beats.insert(hb) }
            usleep(100_000)
        }
        #expect(beats.count >= 3, "heartbeats seen: \(beats.sorted())")
        let now = SystemClock().wallMilliseconds()
        #expect(now - (beats.max() ?? 0) <= 1_500)
    }

    /// One owner of the tier: after `peer tier`, after a restart, when the override lapses and
    /// when another gateway clears it, the registry, the policy's stamp, the watchdog, the `peers`
    /// reply, the status page and the metrics all say the same tier (and where it came from).
    @Test func everyDaemonViewReadsTheRegistrysTier() throws {
        let trial = PeerTier(rawValue: "trial")!
        var quota = LimitSettings()
        try quota.set("Quota", "1GiB")
        let classes = TierClasses(classes: [trial: quota])
        func expectTier(_ h: DaemonHarness, _ t: PeerTier, _ origin: TierOrigin, _ why: String,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
            let alice = try #require(h.engine.peer(named: "alice"), sourceLocation: sourceLocation)
            let view = h.sessions.watchdog.view("alice")
            let status = h.sessions.annotate(h.engine.peerStatuses()).first { $0.name == "alice" }
            let page = PeerStatusPage.build(peer: alice, view: view, restriction: nil, now: h.sessions.time.now())
            let metrics = DaemonMetrics(engine: h.engine, sessions: h.sessions) {
                h.engine.statusReply(interface: "tv0", addresses: [], listenPort: 0, version: "test")
            }.snapshot().peers.first { $0.name == "alice" }
            let seen: [String: PeerTier?] = [
                "registry": alice.tier, "policy": h.engine.policy.tier(alice.handle.rawValue), "watchdog": view?.tier,
                "peers reply": status?.tier, "status page": PeerTier(rawValue: page.tier), "metrics": metrics?.tier,
            ]
            #expect(seen.values.allSatisfy { $0 == t }, "\(why): \(seen)", sourceLocation: sourceLocation)
            #expect(alice.tierOrigin == origin && status?.tierOrigin == origin.rawValue && status?.configuredTier == .free,
                    "\(why)", sourceLocation: sourceLocation)
            #expect(view?.limits == alice.limits && alice.limits.hasQuota == (t == trial), "\(why): limits follow", sourceLocation: sourceLocation)
        }
        var dir = ""
        do {
            let h = try DaemonHarness()
            dir = h.dir
            h.engine.registry.setTierClasses(classes)
            try expectTier(h, .free, .config, "configured")
            guard case .success(.free) = h.sessions.setTier(peer: "alice", trial) else { Issue.record("trial"); return }
            try expectTier(h, trial, .admin, "after peer tier")
            #expect(try StateStore(path: h.storePath, mode: .readOnly).tierOverride(peer: "alice")?.tier == trial)
            h.keep = true
        }
        let again = try DaemonHarness(reusing: dir)
        again.keep = false
        again.engine.registry.setTierClasses(classes)  // as tunneld does with the config's, after the store
        try expectTier(again, trial, .admin, "after a restart")
        // A reload without [Tier trial]: the override lapses, the configured tier applies.
        again.engine.registry.setTierClasses(TierClasses())
        try expectTier(again, .free, .config, "lapsed")
        #expect(again.engine.peer(named: "alice")?.lapsedTierOverride?.tier == trial)
        again.engine.registry.setTierClasses(classes)
        try expectTier(again, trial, .admin, "configured again")
        // Another gateway clears it through the shared store.
        again.sessions.applySharedTiers([SharedTierChange(peer: "alice", tier: nil, changedAt: again.sessions.time.now())])
        try expectTier(again, .free, .config, "cleared on another gateway")
        again.sessions.applySharedTiers([SharedTierChange(peer: "alice", tier: trial, changedAt: again.sessions.time.now())])
        try expectTier(again, trial, .shared, "set on another gateway")
    }

    /// The quick flip of the issue: premium then free inside one WatchdogInterval, in the pause.
    /// The daemon owns both changes (control request path), the window stays, and a restart
    /// afterwards finds the same pause: no fresh window.
    @Test func quickTierFlipInThePauseThenRestartKeepsThePause() throws {
        let now = SystemClock().wallMilliseconds()
        let paused = SessionWindow(peer: "alice", allowedUntil: now - 10_000, reconnectAt: now + 3_600_000)
        var dir = ""
        do {
            let h = try DaemonHarness(windows: [paused])
            dir = h.dir
            h.sessions.watchdog.tick(now: h.sessions.time.now())
            guard case .success(.free) = h.sessions.setTier(peer: "alice", .premium) else { Issue.record("premium"); return }
            #expect(h.sessions.watchdog.view("alice")?.refused == false)
            guard case .success(.premium) = h.sessions.setTier(peer: "alice", .free) else { Issue.record("free"); return }
            let v = try #require(h.sessions.watchdog.view("alice"))
            #expect(v.refused && v.tier == .free && v.window?.reconnectAt == paused.reconnectAt)
            let store = try StateStore(path: h.storePath, mode: .readOnly)
            #expect(try store.window(peer: "alice")?.reconnectAt == paused.reconnectAt)
            #expect(try store.tierOverride(peer: "alice")?.tier == .free)
            h.keep = true
        }
        // A restart on the same state directory: still paused, same dates.
        let again = try DaemonHarness(reusing: dir)
        again.sessions.watchdog.tick(now: again.sessions.time.now())
        let v = try #require(again.sessions.watchdog.view("alice"))
        #expect(v.refused && v.window?.reconnectAt == paused.reconnectAt)
        try again.base.alice.sendInitiation()
        #expect(try again.base.alice.receiveFromGateway(timeout: 300) == nil, "no fresh window after the restart")
    }
}

/// Issue 13 defect 7: a store that cannot be opened at start is retried with backoff and used
/// once it can be; what the watchdog decided meanwhile reaches it.
@Suite(.serialized) struct StoreReopenTests {
    @Test func aStoreThatFailsAtStartIsRetriedAndAttached() throws {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("tv-reopen-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var iface = InterfaceConfig()
        iface.stateDirectory = dir + "/state"
        iface.runtimeDirectory = dir + "/run"
        // The state "directory" is a file: even root cannot create the store under it.
        FileManager.default.createFile(atPath: iface.stateDirectory, contents: Data("not a directory".utf8))
        var made: SessionService?
        let h = try EngineHarness { engine in made = SessionService(engine: engine, interface: iface, log: engine.log) }
        let sessions = try #require(made)
        defer { sessions.stop() }
        #expect(sessions.history.writer == nil)
        #expect(h.log.all.contains { $0.contains("running without history") && $0.contains("retrying") })
        // alice connects while there is no store: her window lives in memory.
        try h.handshake()
        let window = try #require(sessions.watchdog.view("alice")?.window)
        let t0 = sessions.time.now()
        sessions.retryStore(now: t0 + 1_000)  // still a file: fails, backoff doubles
        #expect(sessions.history.writer == nil)
        // The directory becomes usable.
        try FileManager.default.removeItem(atPath: iface.stateDirectory)
        try FileManager.default.createDirectory(atPath: iface.stateDirectory, withIntermediateDirectories: true)
        sessions.retryStore(now: t0 + 2_000)
        #expect(sessions.history.writer == nil, "not before the backoff (2 s after the failed try)")
        sessions.retryStore(now: t0 + 3_100)
        let writer = try #require(sessions.history.writer)
        writer.flush()
        let store = try StateStore(path: iface.storePath, mode: .readOnly)
        #expect(try store.window(peer: "alice")?.allowedUntil == window.allowedUntil, "the in-memory window was written")
        #expect(try store.markers().contains { $0.label.contains("usable again") })
        #expect(h.log.all.contains { $0.contains("usable again") })
    }
}

/// Issue 15, the daemon side: the whole config applied like `wg syncconf`, disabled and expired
/// peers refused by the watchdog.
@Suite(.serialized) struct ConfigReloadTests {
    static let bobKey = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 19 &+ 7) }

    static func alice(_ h: DaemonHarness, tier: PeerTier = .free, allowed: [String] = ["10.99.0.2/32", "fd99::2/128"],
                      disabled: Bool = false, expires: Int64? = nil) throws -> PeerConfig {
        var p = PeerConfig(name: "alice", publicKey: try #require(WireGuardKey(bytes: h.base.alice.publicKey.bytes)),
                           allowedIPs: allowed.map { IPPrefix($0)! }, tier: tier)
        p.disabled = disabled
        p.expiresMs = expires
        return p
    }

    @Test func addRemoveChangeLeaveTheUntouchedPeerAlone() throws {
        let h = try DaemonHarness()
        try h.base.handshake()
        let out = TestPackets.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try h.base.sendPacket(out)
        #expect(h.base.tun.waitWritten(count: 1) == [out])
        let session = try #require(h.sessions.watchdog.view("alice")?.session)
        let bobPub = try #require(WireGuardDevice(privateKey: Self.bobKey)).publicKey
        let bob = PeerConfig(name: "bob", publicKey: try #require(WireGuardKey(bytes: bobPub.bytes)),
                             allowedIPs: [IPPrefix("10.99.0.3/32")!], tier: .premium)
        // bob appears; alice is untouched: same session, her packets still pass.
        var diff = h.engine.applyConfigPeers([try Self.alice(h), bob])
        #expect(diff.added == ["bob"] && diff.removed.isEmpty && diff.changed.isEmpty)
        #expect(h.sessions.watchdog.view("alice")?.session == session)
        try h.base.sendPacket(out)
        #expect(h.base.tun.waitWritten(count: 1) == [out])
        #expect(h.engine.registry.current.named("bob")?.tier == .premium)
        // alice's AllowedIPs change (applied in place); bob goes.
        diff = h.engine.applyConfigPeers([try Self.alice(h, allowed: ["10.99.0.2/32", "10.99.0.20/32"])])
        #expect(diff.added.isEmpty && diff.removed == ["bob"] && diff.changed == ["alice"])
        #expect(h.engine.registry.current.named("alice")?.allowedIPs.count == 2)
        #expect(h.engine.registry.current.named("bob") == nil)
        #expect(h.sessions.watchdog.view("alice")?.session == session, "a changed peer keeps its session")
        // The same config again: nothing changes.
        diff = h.engine.applyConfigPeers([try Self.alice(h, allowed: ["10.99.0.2/32", "10.99.0.20/32"])])
        #expect(diff.added.isEmpty && diff.removed.isEmpty && diff.changed.isEmpty)
    }

    @Test func aDisabledPeerIsCutAndRefusedAndAnExpiredOneToo() throws {
        let h = try DaemonHarness()
        try h.base.handshake()
        #expect(h.sessions.watchdog.view("alice")?.session != nil)
        h.sessions.configPeersChanged([try Self.alice(h, disabled: true)])
        #expect(h.sessions.watchdog.view("alice")?.session == nil)
        #expect(h.sessions.watchdog.view("alice")?.refused == true)
        // A new initiation is refused at arrival, recorded with reason `disabled`.
        usleep(60_000)  // past WireGuard's initiation rate limit (one per 20 ms per peer)
        let again = try h.base.client(privateKey: EngineHarness.clientKey, address: IPAddress(v4: 0xC000_0202))
        try again.sendInitiation()
        #expect(try again.receiveFromGateway(timeout: 300) == nil)
        #expect(h.engine.counters.count(.peerRefused) == 1)
        let store = try h.store()
        #expect(try store.sessions(peer: "alice").first?.endReason == .disabled)
        let refusals = try store.refusals(peer: "alice")
        #expect(refusals.contains { $0.reason == "disabled" }, "\(refusals) refused=\(h.engine.counters.count(.peerRefused))")
        // Enabled again: admitted. Then an Expires in the past: refused, reason `expired`.
        h.sessions.configPeersChanged([try Self.alice(h)])
        #expect(h.sessions.watchdog.view("alice")?.refused == false)
        let now = SystemClock().wallMilliseconds()
        h.sessions.configPeersChanged([try Self.alice(h, expires: now - 1_000)])
        #expect(h.sessions.watchdog.view("alice")?.refused == true)
        #expect(!h.sessions.watchdog.admitInitiation(try #require(h.engine.peer(named: "alice")).handle, now: now))
        #expect(try h.store().refusals(peer: "alice").contains { $0.reason == "expired" })
    }
}

/// Issue 19: a `Disabled` / `Expires` change made by one gateway's config applies on every
/// gateway sharing the store, over their own configs; the latest change wins.
@Suite(.serialized) struct SharedAdmissionTests {
    @Test func aDisableOnOneGatewayRefusesThePeerOnTheOther() throws {
        let store = MemorySharedState()
        let a = try DaemonHarness(shared: { try store.connect() }, gateway: "gw-a")
        let b = try DaemonHarness(shared: { try store.connect() }, gateway: "gw-b")
        let alice = try ConfigReloadTests.alice(b)
        a.sessions.configPeersChanged([try ConfigReloadTests.alice(a)])
        b.sessions.configPeersChanged([alice])  // first configs: nothing is shared
        try a.sessions.start()
        try b.sessions.start()
        func passes() {
            a.sessions.shared!.pass()
            b.sessions.shared!.pass()
        }
        passes()
        #expect(try store.connect().admissions(changedAfter: 0).changes.isEmpty, "a start shares nothing")
        try b.base.handshake()
        #expect(b.sessions.watchdog.view("alice")?.session != nil)
        // gw-a's config reloads with Disabled = true: refused there at once, on gw-b after a pass
        // (its session cut), although gw-b's own config still admits alice.
        a.sessions.configPeersChanged([try ConfigReloadTests.alice(a, disabled: true)])
        #expect(a.sessions.watchdog.view("alice")?.refused == true)
        #expect(b.sessions.watchdog.view("alice")?.refused == false)
        passes()
        #expect(b.sessions.restriction(of: "alice") == .disabled)
        #expect(b.sessions.watchdog.view("alice")?.refused == true && b.sessions.watchdog.view("alice")?.session == nil)
        #expect(b.base.log.all.contains { $0.contains("shared store: alice disabled on gw-a") }, "\(b.base.log.all.suffix(5))")
        // gw-b reloading its unchanged config does not undo it (its config did not change).
        b.sessions.configPeersChanged([alice])
        #expect(b.sessions.restriction(of: "alice") == .disabled)
        // gw-b's operator sets an Expires in the past: the latest change, on both.
        let now = SystemClock().wallMilliseconds()
        b.sessions.configPeersChanged([try ConfigReloadTests.alice(b, expires: now - 1_000)])
        passes()  // gw-b pushes it after gw-a's pull: gw-a learns it at its next pass
        passes()
        #expect(a.sessions.restriction(of: "alice") == .expires(at: now - 1_000) && b.sessions.restriction(of: "alice") == .expires(at: now - 1_000))
        // gw-a enables her again (its config drops Disabled): admitted on both.
        a.sessions.configPeersChanged([try ConfigReloadTests.alice(a)])
        passes()
        passes()
        #expect(a.sessions.restriction(of: "alice") == nil && b.sessions.restriction(of: "alice") == nil)
        #expect(b.sessions.watchdog.view("alice")?.refused == false)
        let rows = try store.connect().admissions(changedAfter: 0).changes
        #expect(rows.map { "\($0.peer) \($0.disabled) \($0.expiresAt == nil) \($0.gateway)" } == ["alice false true gw-a"])
    }

    @Test func mergeTakesTheSharedRowOverTheConfig() {
        let shared = ["bob": SharedAdmission(peer: "bob", disabled: false, expiresAt: nil, changedAt: 1, gateway: "gw-b"),
                      "carol": SharedAdmission(peer: "carol", disabled: true, expiresAt: nil, changedAt: 1, gateway: "gw-b"),
                      "gone": SharedAdmission(peer: "gone", disabled: true, expiresAt: nil, changedAt: 1, gateway: "gw-b")]
        let m = SessionService.merge(config: ["bob": .disabled, "dave": .expires(at: 5)], shared: shared, configured: ["bob", "carol", "dave"])
        #expect(m == ["carol": .disabled, "dave": .expires(at: 5)], "bob enabled elsewhere, carol disabled elsewhere, a peer not configured here ignored")
    }
}

/// The running ticker keeps passing after the wall clock steps back (scripts/e2e/clock.sh found a
/// build whose pass schedule ran on the watchdog's time, which jumps back with the step, so no
/// pass ran for an hour and a window never ended).
@Suite(.serialized) struct TickerAcrossStepsTests {
    @Test func aBackwardStepDoesNotStopTheWatchdog() throws {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("tv-ticker-step-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var iface = InterfaceConfig()
        iface.stateDirectory = dir + "/state"
        iface.runtimeDirectory = dir + "/run"
        iface.freeSession = .seconds(2)
        iface.freePause = .seconds(60)
        iface.watchdogInterval = .seconds(1)
        let clock = ManualClock()
        var made: SessionService?
        let h = try EngineHarness(clock: clock) { engine in made = SessionService(engine: engine, interface: iface, log: engine.log) }
        let sessions = try #require(made)
        defer { sessions.stop() }
        try sessions.start()
        try h.handshake()
        #expect(sessions.watchdog.view("alice")?.session != nil)
        clock.setWall(milliseconds: clock.wallMilliseconds() - 3_600_000)
        // 3 s of the machine's time pass while the ticker runs (it wakes every real second).
        for _ in 0..<30 {
            clock.advance(by: .milliseconds(100))
            usleep(100_000)
        }
        #expect(sessions.watchdog.view("alice")?.session == nil, "the 2 s window did not end after the step")
        #expect(sessions.watchdog.view("alice")?.refused == true)
    }
}
