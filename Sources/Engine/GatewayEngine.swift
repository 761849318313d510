// The gateway's data path.
//
// Four dedicated threads move packets; nothing on them allocates per packet or holds a lock
// across I/O:
//
//   inbound  (UDP → TUN): recvmmsg a batch → handshake messages (type 1–3 of their exact length)
//            are copied to the bounded handshake queue (full: dropped and counted) →
//            WireGuardDevice.receive decrypts each transport datagram in place → under the flow lock, once per
//            batch: parse the inner packet, drop it unless its source is in the sending peer's
//            AllowedIPs (cryptokey routing), track its flow, take or reuse the flow's verdict
//            (allow: copy to the TUN batch; block: drop; reject: build an RST / ICMP unreachable
//            that goes back through the tunnel; pending — host rules only — handshake passes, the
//            first payload is held by HostGate until the flow's host is read, then released or
//            dropped) → write the TUN batch → encrypt and sendmmsg the
//            replies, and any packets that were waiting for the handshake that just completed.
//   outbound (TUN → UDP): read a batch from the TUN device at 16 bytes of headroom → under the
//            flow lock: parse, find the destination peer in the AllowedIPs trie, track the flow,
//            verdict (DNS answers to the peer teach HostGate names) → outside the lock: encrypt
//            each packet in place → sendmmsg runs of slots.
//            A peer without a session gets the packet queued (bounded) and a handshake started.
//   handshake  the handshake queue → only messages that pass `HandshakeScreen` (right length,
//            valid mac1) count toward "under load" (more than `underLoadHandshakesPerSecond` in
//            the current second: cookie replies and the per-source rate limit) →
//            WireGuardDevice.receive, asking `HandshakeAdmission` before any response is built →
//            sendmmsg the responses and cookie replies, and the packets that waited for a
//            handshake that just completed. The X25519 work of a flood never delays transport data.
//   timers   every 100 ms: WireGuardDevice.tick (handshake retries, keepalives, key expiry),
//            an incremental flow-expiry sweep, pending flows past `HostWait` decided without a
//            host, and the policy's next `during` boundary.
//
// Each thread is a file: GatewayEngine+Inbound, +Outbound, +Handshake, +Timers; the decisions
// they take under the flow lock are in GatewayEngine+FlowDecisions (a `FlowDecision` value,
// reported once by `report`, every flow end by `reportEnded`).
//
// `FlowState` — the flow table, fragments, host gate and flow caps — is shared by the data
// threads behind one mutex (`flows`) taken once per batch. The policy in force and the AllowedIPs
// trie are immutable snapshots swapped under their own mutexes and read once per batch.
import SystemIO
import Core
import Packet
import Policy
import Runtime
import Synchronization
import WireGuard

/// Tunables of the data path.
public struct GatewayOptions: Sendable {
    /// Packets per batch (recvmmsg/sendmmsg/TUN reads).
    public var batchSize = 64
    /// Most flows tracked at once (least recently used evicted beyond).
    public var flowCapacity = 65_536
    /// Packets queued per peer while its handshake is in progress.
    public var pendingPerPeer = 64
    /// Period of the timer thread.
    public var tickMilliseconds: Int32 = 100
    /// Flow-table entries examined per timer tick by the expiry sweep.
    public var expiryBudget = 2_048
    /// Handshake messages per second above which the device is "under load" (cookies, rate limit).
    /// Only messages that pass `HandshakeScreen` (right length, valid mac1) count (whitepaper §5.3).
    public var underLoadHandshakesPerSecond = 256
    /// Handshake messages waiting for the handshake thread at most (wireguard-go: 1024); beyond,
    /// they are dropped and counted (`handshake-backlog-full`).
    public var handshakeQueueCapacity = 1024
    /// How long an initiation admission answered `.later` (a window opening in the shared store
    /// on another thread) waits on the handshake thread to be asked again before it is dropped;
    /// the client retries after REKEY_TIMEOUT (5 s) anyway, so no longer than that.
    public var parkedInitiationMs = 4_500
    /// Seed of the flow table's bucket hash. Nil (the default): a fresh random one from the
    /// system (`SystemRandomNumberGenerator`, getrandom(2)) for every engine, so peers cannot
    /// predict which keys share a bucket. Set it only to reproduce a run.
    public var flowHashSeed: UInt64? = nil
    /// Flows that may wait for their host name at once (docs/policy.md); beyond, a flow is
    /// decided without one (counted `pending-overflow`). Each costs a 16 KiB reassembly buffer
    /// and `hostHeldPacketsPerFlow` MTU-sized packets, allocated when host rules first apply.
    public var hostPendingFlows = 256
    /// Packets held per pending flow at most; one more decides it without a host (`held-overflow`).
    public var hostHeldPacketsPerFlow = 8
    /// How long a pending flow waits for its host name before it is decided without one.
    public var hostPendingTimeoutMs: Int64 = 1000
    /// Addresses the DNS-learned name cache holds (all peers together; LRU beyond).
    public var dnsCacheAddresses = 16_384
    /// The shortest and longest DNS TTL honoured for learned names, seconds.
    public var dnsTTLFloor: UInt32 = 60
    public var dnsTTLCeiling: UInt32 = 86_400
    /// UDP/443 flows whose host cannot be read (`QUIC =`).
    public var quic: QUICHostMode = .inspect
    /// What `gateway` in the rules stands for at every policy reload: the interface's own
    /// addresses, as at start (an `Address` change applies at the next restart).
    public var policyGateway: [IPAddress] = []
    /// Test hook (`TUNNELD_TEST_WEDGE_FILE`): while this file exists the timer thread stops
    /// making progress, as a wedged data path would, so its heartbeat stands still and tunneld
    /// stops sending systemd `WATCHDOG=1`. Nil (the default) costs nothing.
    public var testWedgeFile: String? = nil
    public init() {}
}

/// The daemon engine: a WireGuard device, a TUN device and a datagram bind, joined by the flow
/// table and the policy. Written against `TunDevice`, `DatagramBind` and `TimeSource`, so tests
/// run it over in-memory fakes (`TestSupport`) and the daemon over Linux.
public final class GatewayEngine: @unchecked Sendable {
    // Safe: mutable state lives behind the Mutexes below or in atomics; the thread handles are
    // touched only by start/stop on the owning thread.
    public let device: WireGuardDevice
    public let tun: any TunDevice
    public let bind: any DatagramBind
    public let clock: any TimeSource
    public let log: Logger
    public let options: GatewayOptions
    public let counters = GatewayCounters()
    /// Wall-clock time the engine started (epoch ms).
    public let startedAtMs: Int64

    let policyState: Mutex<ActivePolicy>
    /// Every peer: name, keys, tier, AllowedIPs (the routing trie the data path reads once per
    /// batch). The one registry the watchdog, history, observer and servers read too.
    public let registry = PeerRegistry()
    /// Byte accounting of peers with a quota or an `IdleTimeout` (armed by the watchdog).
    public let quotas = QuotaMeter()
    /// The flow table, fragments, host gate and flow caps, behind the one flow lock
    /// (`withFlowState`; `withFlows` for the table alone).
    let flows: Mutex<FlowState>
    /// The seed of the flow table's bucket hash (`GatewayOptions.flowHashSeed`, else random).
    public let flowHashSeed: UInt64
    /// Rate shaping and flow caps (GatewayEngine+Limits.swift).
    let limits = LimitBox()
    let pending = Mutex<[UInt32: PendingPackets]>([:])
    let handshakeWindow = Mutex<(second: UInt64, count: Int)>((0, 0))
    /// Handshake messages from the inbound thread to the handshake thread.
    let handshakes: HandshakeQueue
    let running = Atomic<Bool>(false)
    /// Loop turns of the four data-path threads (inbound, handshake, outbound, timers): each adds
    /// one per turn (at least four times a second while idle: their waits time out at 250 ms), so a
    /// counter that stands still names a wedged thread (systemd's watchdog, `Tunneld`).
    let beatInbound = Atomic<UInt64>(0), beatHandshake = Atomic<UInt64>(0)
    let beatOutbound = Atomic<UInt64>(0), beatTimers = Atomic<UInt64>(0)
    /// Live ring and capture (nil: none). Set before `start()`; the data path reads it unlocked
    /// (so without the per-access exclusivity check).
    @exclusivity(unchecked) public var observer: (any PacketObserving)?
    private var threads: [WorkerThread] = []
    /// History hooks (see `GatewayEvents`); set before `start()`, read-only after (that ordering
    /// is what makes the unsynchronised access safe).
    public var events: (any GatewayEvents)?
    /// Who may complete a handshake (the watchdog); nil admits every peer. Set before `start()`.
    public var admission: (any HandshakeAdmission)?
    /// Called after each successful policy reload with (generation, rule count, directory);
    /// set before `start` (tunneld's `DaemonMarkers` writes a marker from it).
    public let policyReloadHook = Mutex<(@Sendable (UInt64, Int, String) -> Void)?>(nil)

    /// An engine over the given devices. `policy` is the compiled policy to start with (generation 1).
    public init(device: WireGuardDevice, tun: any TunDevice, bind: any DatagramBind, clock: any TimeSource,
                policy: (PolicySet, CompiledPolicy), options: GatewayOptions = GatewayOptions(), log: Logger)
    {
        self.device = device
        self.tun = tun
        self.bind = bind
        self.clock = clock
        self.log = log
        self.options = options
        startedAtMs = clock.wallMilliseconds()
        handshakes = HandshakeQueue(capacity: max(1, options.handshakeQueueCapacity))
        var random = SystemRandomNumberGenerator()
        let table = FlowTable(capacity: options.flowCapacity, hashSeed: options.flowHashSeed ?? random.next())
        flowHashSeed = table.hashSeed
        flows = Mutex(FlowState(table: table, hostGate: HostGate(options: options, counters: counters,
                                                                 flowCapacity: options.flowCapacity, mtu: tun.mtu)))
        let now = clock.wallMilliseconds()
        policyState = Mutex(ActivePolicy(
            compiled: policy.1, set: policy.0, generation: 1, loadedAtMs: now, peers: [],
            nextBoundary: GatewayEngine.boundary(policy.1, nowMs: now)))
        // Peer changes (added, removed, tier) restamp the policy with the new identities.
        registry.onChange { [weak self] _, new in self?.restampPolicy(peers: new) }
    }

    // MARK: Peers

    /// A peer to add (``addPeers(_:)``).
    public struct NewPeer: Sendable {
        public var name: String
        public var publicKey: WireGuard.PublicKey
        public var presharedKey: [UInt8]?
        public var allowedIPs: [IPPrefix]
        public var endpoint: Endpoint?
        public var persistentKeepalive: UInt16
        public var tier: PeerTier
        public var origin: PeerOrigin
        /// The peer's own limit keys (`[Peer]` section).
        public var limits: LimitSettings

        public init(name: String, publicKey: WireGuard.PublicKey, presharedKey: [UInt8]?, allowedIPs: [IPPrefix],
                    endpoint: Endpoint?, persistentKeepalive: UInt16, tier: PeerTier, origin: PeerOrigin = .config,
                    limits: LimitSettings = LimitSettings()) {
            self.limits = limits
            self.name = name
            self.publicKey = publicKey
            self.presharedKey = presharedKey
            self.allowedIPs = allowedIPs
            self.endpoint = endpoint
            self.persistentKeepalive = persistentKeepalive
            self.tier = tier
            self.origin = origin
        }
    }

    /// Adds (or updates) a peer: WireGuard identity, AllowedIPs routes and its tier for policy.
    @discardableResult
    public func addPeer(name: String, publicKey: WireGuard.PublicKey, presharedKey: [UInt8]?, allowedIPs: [IPPrefix],
                        endpoint: Endpoint?, persistentKeepalive: UInt16, tier: PeerTier,
                        origin: PeerOrigin = .config) -> PeerHandle
    {
        addPeers([NewPeer(name: name, publicKey: publicKey, presharedKey: presharedKey, allowedIPs: allowedIPs,
                          endpoint: endpoint, persistentKeepalive: persistentKeepalive, tier: tier, origin: origin)])[0]
    }

    /// Adds (or updates) peers in one registry change (a start or reload with thousands of peers
    /// stays linear); returns their handles in order.
    @discardableResult
    public func addPeers(_ list: [NewPeer]) -> [PeerHandle] {
        var handles: [PeerHandle] = []
        var batch: [GatewayPeer] = []
        handles.reserveCapacity(list.count)
        batch.reserveCapacity(list.count)
        for p in list {
            let handle = device.addPeer(PeerConfiguration(
                publicKey: p.publicKey, presharedKey: p.presharedKey, persistentKeepaliveSeconds: p.persistentKeepalive,
                endpoint: p.endpoint))
            handles.append(handle)
            var g = GatewayPeer(
                handle: handle, name: p.name, publicKey: p.publicKey, presharedKey: p.presharedKey, allowedIPs: p.allowedIPs,
                tier: p.tier, persistentKeepalive: p.persistentKeepalive, origin: p.origin)
            g.limitSettings = p.limits
            batch.append(g)
        }
        registry.put(batch)
        return handles
    }

    /// Removes a peer: its keys, routes, queued packets and flows' policy identity.
    public func removePeer(_ handle: PeerHandle) {
        device.removePeer(handle)
        pending.withLock { $0[handle.rawValue] = nil }
        withFlowState { $0.hostGate.forget(peer: handle.rawValue) }
        registry.remove(handle)
    }

    /// Replaces a peer's AllowedIPs (UAPI `replace_allowed_ips` / `allowed_ip`).
    public func setAllowedIPs(_ handle: PeerHandle, _ prefixes: [IPPrefix], replace: Bool) {
        registry.setAllowedIPs(handle, prefixes, replace: replace)
    }

    /// Every configured peer, by handle.
    public var peers: [GatewayPeer] { registry.current.all }

    /// The peer called `name`.
    public func peer(named name: String) -> GatewayPeer? { registry.current.named(name) }

    // MARK: Policy

    /// The policy in force.
    public var policy: ActivePolicy { policyState.withLock { $0 } }

    /// Installs a newly loaded policy under the next generation; existing flows re-evaluate on
    /// their next packet. Returns the new generation.
    @discardableResult
    public func install(policy: (PolicySet, CompiledPolicy)) -> UInt64 {
        let now = clock.wallMilliseconds()
        let peers = policyPeers(registry.current)
        return policyState.withLock { current in
            current = ActivePolicy(
                compiled: policy.1, set: policy.0, generation: current.generation + 1, loadedAtMs: now, peers: peers,
                nextBoundary: GatewayEngine.boundary(policy.1, nowMs: now))
            return current.generation
        }
    }

    /// Same rules, next generation, current peers (after peer changes or a time boundary).
    func restampPolicy(peers directory: PeerDirectory? = nil) {
        let now = clock.wallMilliseconds()
        let peers = policyPeers(directory ?? registry.current)
        policyState.withLock { current in
            current = current.restamped(
                generation: current.generation + 1, peers: peers,
                nextBoundary: GatewayEngine.boundary(current.compiled, nowMs: now))
        }
    }

    private func policyPeers(_ directory: PeerDirectory) -> [(handle: UInt32, name: String, tier: PeerTier)] {
        directory.all.map { ($0.handle.rawValue, $0.name, $0.tier) }
    }

    static func boundary(_ compiled: CompiledPolicy, nowMs: Int64) -> Int64? {
        let s = nowMs / 1000
        return compiled.nextBoundary(afterEpochSeconds: s, utcOffsetSeconds: ActivePolicy.localUTCOffset(epochSeconds: s))
    }

    // MARK: Life cycle

    /// Starts the inbound, handshake, outbound and timer threads.
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        threads = [
            WorkerThread(name: "tv-inbound") { [self] in inboundLoop() },
            WorkerThread(name: "tv-handshake") { [self] in handshakeLoop() },
            WorkerThread(name: "tv-outbound") { [self] in outboundLoop() },
            WorkerThread(name: "tv-timers") { [self] in timerLoop() },
        ]
    }

    /// Stops the threads (closing the TUN device and the bind wakes them) and waits for them.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        tun.close()
        bind.close()
        handshakes.close()
        for t in threads { t.join() }
        threads = []
        if let events {
            let nowMs = Int64(clock.boottimeNanoseconds() / 1_000_000)
            withFlows { events.engineStopping(flows: $0, monoMs: nowMs) }
        }
    }

    /// Ends a peer's session now: keys dropped, queued packets discarded. The peer may handshake
    /// again (unless refused).
    public func kick(_ handle: PeerHandle) {
        device.dropKeys(handle)
        pending.withLock { $0[handle.rawValue]?.removeAll() }
    }

    /// Number of flows tracked now.
    public var flowCount: Int { withFlows { $0.count } }

    /// Flow ids continue above `last` (the store's highest), so they are unique across restarts.
    public func seedFlowIDs(after last: UInt64) { withFlows { $0.seedIDs(after: last) } }

    /// Numbers policy generations above `last` (the highest one the store's decisions name), so
    /// a stored generation names one policy across restarts. The policy in force is restamped.
    public func seedPolicyGeneration(after last: UInt64) {
        let now = clock.wallMilliseconds()
        let peers = policyPeers(registry.current)
        policyState.withLock { current in
            guard current.generation <= last else { return }
            current = current.restamped(generation: last + 1, peers: peers,
                                        nextBoundary: GatewayEngine.boundary(current.compiled, nowMs: now))
        }
    }

    /// Runs `body` with the flow table, under the flow lock (held once per data-path batch).
    @inline(__always)
    public func withFlows<R: Sendable>(_ body: (FlowTable) throws -> R) rethrows -> R {
        try flows.withLock { try body($0.table) }
    }

    /// Runs `body` with everything the flow decisions use, under the flow lock.
    @inline(__always)
    func withFlowState<R>(_ body: (FlowState) throws -> R) rethrows -> R {
        try flows.withLock { try body($0) }
    }

    // MARK: Helpers shared by the loops

    /// The data-path threads' heartbeat counters, in `heartbeatNames` order.
    public func heartbeats() -> [UInt64] {
        [beatInbound.load(ordering: .relaxed), beatHandshake.load(ordering: .relaxed),
         beatOutbound.load(ordering: .relaxed), beatTimers.load(ordering: .relaxed)]
    }
    /// The threads `heartbeats()` counts, by name.
    public static let heartbeatNames = ["tv-inbound", "tv-handshake", "tv-outbound", "tv-timers"]

    /// Handshake messages waiting for the handshake thread now.
    public var handshakeBacklog: Int { handshakes.depth }

    /// True while more screened handshake messages than `underLoadHandshakesPerSecond` arrived
    /// in the current second (cookie replies and the per-source rate limit are on).
    public var underLoad: Bool {
        let second = clock.boottimeNanoseconds() / 1_000_000_000
        return handshakeWindow.withLock { $0.second == second && $0.count > options.underLoadHandshakesPerSecond }
    }

    /// The flow table's size, capacity and counters (one take of the flow lock).
    public var flowTableSnapshot: (count: Int, capacity: Int, stats: FlowTableStats) {
        withFlows { ($0.count, $0.capacity, $0.stats) }
    }

    /// Counts one handshake message that passed `HandshakeScreen` in the current second; true when
    /// more than the configured rate arrived in it (cookies and the per-source rate limit engage).
    /// Call only for screened messages: junk must never make the gateway "under load".
    func noteHandshake(now: UInt64) -> Bool {
        let second = now / 1_000_000_000
        return handshakeWindow.withLock { w in
            if w.second != second { w = (second, 0) }
            w.count += 1
            return w.count > options.underLoadHandshakesPerSecond
        }
    }

    /// Wall clock in nanoseconds since 1970, for TAI64N timestamps.
    func wallNanoseconds() -> UInt64 { UInt64(max(0, clock.wallMilliseconds())) &* 1_000_000 }

    /// Queues a packet for `peer` until its handshake completes.
    func enqueuePending(_ peer: PeerHandle, _ packet: UnsafeRawBufferPointer) {
        let kept = pending.withLock { queues -> Bool in
            let q: PendingPackets
            if let existing = queues[peer.rawValue] {
                q = existing
            } else {
                q = PendingPackets(capacity: options.pendingPerPeer, mtu: tun.mtu)
                queues[peer.rawValue] = q
            }
            return q.push(packet)
        }
        if !kept { counters.drop(.handshakeQueueFull) }
    }
}
