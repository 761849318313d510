// The one peer registry: every peer's name, keys, tier and AllowedIPs, whether it came from
// tunneld.conf or was added at runtime over the UAPI (`wg set`). The engine writes it (addPeer,
// removePeer, updatePeer, setAllowedIPs keep it and the WireGuard device in step) and reads its
// routing table once per batch; the watchdog, history, the live ring, the control server and the
// UAPI server read the same snapshots. Nobody keeps a copy of their own. That includes the tier:
// the configured one, the runtime override (`tunnelctl peer tier`) with where it came from, and
// so the tier in force, which policy, limits, the watchdog and every view read here.
import Core
import Packet
import Synchronization
import WireGuard

/// Where a peer came from.
public enum PeerOrigin: String, Sendable, Hashable {
    /// A `[Peer]` section of tunneld.conf.
    case config
    /// Added at runtime over the WireGuard UAPI (`wg set IFACE peer KEY …`).
    case runtime
}

/// Where a peer's tier in force comes from.
public enum TierOrigin: String, Sendable, Hashable, Codable {
    /// No override: the configured tier (`Tier =`, `DefaultTier` for a peer added over the UAPI).
    case config
    /// `tunnelctl peer tier` on this gateway (kept in its store, so also after a restart).
    case admin
    /// `tunnelctl peer tier` on another gateway, through the shared store.
    case shared
}

/// A runtime tier override (`tunnelctl peer tier NAME TIER`) as the registry holds it.
public struct PeerTierOverride: Sendable, Hashable {
    /// The tier it sets.
    public var tier: PeerTier
    /// Who set it: ``TierOrigin/admin`` or ``TierOrigin/shared``.
    public var origin: TierOrigin
    /// When it was set (Unix epoch ms).
    public var since: Int64

    public init(tier: PeerTier, origin: TierOrigin, since: Int64) {
        self.tier = tier
        self.origin = origin
        self.since = since
    }
}

/// An override and whether it is in force, shared by reference (8 bytes in a ``GatewayPeer``).
final class TierOverrideBox: Sendable, Hashable {
    let override: PeerTierOverride
    /// False when its tier is not a configured class (any more): it lapsed, the configured tier applies.
    let inForce: Bool

    init(_ override: PeerTierOverride, inForce: Bool) {
        self.override = override
        self.inForce = inForce
    }

    static func == (a: TierOverrideBox, b: TierOverrideBox) -> Bool { a === b || (a.override == b.override && a.inForce == b.inForce) }

    func hash(into h: inout Hasher) {
        h.combine(override)
        h.combine(inForce)
    }
}

/// One peer as every part of the daemon knows it.
public struct GatewayPeer: Sendable, Hashable {
    /// The WireGuard device's handle (also the AllowedIPs owner and the live ring's peer index).
    public var handle: PeerHandle
    /// The peer's name: `Name =` in the config, `peer-XXXXXXXX` (its key's first base64 characters)
    /// for a peer added over the UAPI. The store, policy, ring and CLI all use it.
    public var name: String
    public var publicKey: WireGuard.PublicKey
    public var presharedKey: [UInt8]?
    /// The prefixes configured for the peer (the routing table in ``PeerDirectory/routes`` is
    /// built from them).
    public var allowedIPs: [IPPrefix]
    /// The tier in force (what `tier` rules match, what limits resolve with, what every view
    /// shows): the override in force, else ``configTier``.
    public var tier: PeerTier { tierOverride?.tier ?? configTier }
    /// The tier of the configuration (`DefaultTier`, else `free`, for a peer added at runtime).
    public var configTier: PeerTier
    /// The registry's override for this peer (by name), set at every change; nil: none.
    var overrideBox: TierOverrideBox?
    /// The runtime override in force (nil: the configured tier applies).
    public var tierOverride: PeerTierOverride? { overrideBox.flatMap { $0.inForce ? $0.override : nil } }
    /// An override the registry holds for this peer that is not in force: its tier is not a
    /// configured class (a reload removed `[Tier NAME]`), so it lapsed to ``configTier``.
    public var lapsedTierOverride: PeerTierOverride? { overrideBox.flatMap { $0.inForce ? nil : $0.override } }
    /// Where ``tier`` comes from.
    public var tierOrigin: TierOrigin { tierOverride?.origin ?? .config }
    public var persistentKeepalive: UInt16
    public var origin: PeerOrigin
    /// ``limitSettings`` and ``limits``, behind one reference that peers with the same ones share
    /// (the registry interns them at every change): ≈ 300 bytes a peer otherwise, 3 MB at 10,000.
    private var limitBox = PeerLimitBox.empty
    /// The peer's own limit keys (its `[Peer]` section), over its tier's class.
    public var limitSettings: LimitSettings {
        get { limitBox.settings }
        set { if newValue != limitBox.settings { limitBox = PeerLimitBox(settings: newValue, limits: limitBox.limits) } }
    }
    /// The limits in force: ``limitSettings`` over the class of ``tier`` over the tier's defaults
    /// (`TierClasses.resolve`). The registry keeps it in step with the tier and the classes at
    /// every change; the watchdog, the data path and the status page read it here.
    public internal(set) var limits: PeerLimits {
        get { limitBox.limits }
        set { if newValue != limitBox.limits { limitBox = PeerLimitBox(settings: limitBox.settings, limits: newValue) } }
    }

    /// Makes peers with equal limit boxes share one (`PeerRegistry` after resolving limits).
    static func internLimits(_ peers: inout [GatewayPeer]) {
        var seen: [PeerLimitBox: PeerLimitBox] = [:]
        for i in peers.indices {
            let b = peers[i].limitBox
            if let shared = seen[b] {
                if shared !== b { peers[i].limitBox = shared }
            } else {
                seen[b] = b
            }
        }
    }

    /// A peer from its parts; `tier` is its configured tier (the registry adds any override).
    public init(handle: PeerHandle, name: String, publicKey: WireGuard.PublicKey, presharedKey: [UInt8]? = nil,
                allowedIPs: [IPPrefix] = [], tier: PeerTier, persistentKeepalive: UInt16 = 0,
                origin: PeerOrigin = .config)
    {
        self.handle = handle
        self.name = name
        self.publicKey = publicKey
        self.presharedKey = presharedKey
        self.allowedIPs = allowedIPs
        configTier = tier
        self.persistentKeepalive = persistentKeepalive
        self.origin = origin
    }
}

/// A peer's limit settings with the limits they resolve to, immutable and shared by reference
/// between peers that have the same ones (most peers of a tier: no `[Peer]` limit keys).
final class PeerLimitBox: Sendable, Hashable {
    let settings: LimitSettings
    let limits: PeerLimits

    init(settings: LimitSettings, limits: PeerLimits) {
        self.settings = settings
        self.limits = limits
    }

    /// No settings, no limits.
    static let empty = PeerLimitBox(settings: LimitSettings(), limits: .unlimited)

    static func == (a: PeerLimitBox, b: PeerLimitBox) -> Bool {
        a === b || (a.settings == b.settings && a.limits == b.limits)
    }

    func hash(into h: inout Hasher) {
        h.combine(settings)
        h.combine(limits)
    }
}

/// Every peer at one moment: immutable, so a reader takes one under a short lock and uses it
/// without one (the data path takes one per batch for its routing table).
public final class PeerDirectory: Sendable {
    /// Bumped by every change of the registry.
    public let version: UInt64
    /// Every peer, in handle order.
    public let all: [GatewayPeer]
    /// Cryptokey routing (whitepaper §2): prefix → peer handle, longest match.
    public let routes: AllowedIPs
    private let byHandle: [UInt32: Int]
    private let byName: [String: Int]

    init(version: UInt64, peers: [GatewayPeer], routes: AllowedIPs) {
        self.version = version
        all = peers.sorted { $0.handle < $1.handle }
        self.routes = routes
        var h: [UInt32: Int] = [:], n: [String: Int] = [:]
        for (i, p) in all.enumerated() {
            h[p.handle.rawValue] = i
            if n[p.name] == nil { n[p.name] = i }
        }
        byHandle = h
        byName = n
    }

    /// Number of peers.
    public var count: Int { all.count }

    /// The peer with `handle`.
    public subscript(handle: PeerHandle) -> GatewayPeer? { peer(handle.rawValue) }

    /// The peer whose handle's raw value is `raw` (as the flow hooks and the ring carry it).
    public func peer(_ raw: UInt32) -> GatewayPeer? { byHandle[raw].map { all[$0] } }

    /// The peer called `name`.
    public func named(_ name: String) -> GatewayPeer? { byName[name].map { all[$0] } }

    /// The name of the peer with raw handle `raw`.
    public func name(of raw: UInt32) -> String? { peer(raw)?.name }

    /// The peer with this public key.
    public func peer(publicKey: WireGuard.PublicKey) -> GatewayPeer? { all.first { $0.publicKey == publicKey } }
}

/// The registry: the current ``PeerDirectory`` and the changes to it. Changes are serialised;
/// after each, the listeners run (in registration order, on the changing thread, before the
/// change returns) with the directory before and after. A listener must not change the registry.
public final class PeerRegistry: Sendable {
    private let directory: Mutex<PeerDirectory>
    private let versionNow = Atomic<UInt64>(0)
    /// Held across a change and its listeners, so listeners see changes one at a time and in order.
    private let changes = Mutex<[@Sendable (PeerDirectory, PeerDirectory) -> Void]>([])
    /// The tier classes every peer's ``GatewayPeer/limits`` are resolved with.
    private let classes: Mutex<TierClasses>
    /// The runtime tier overrides by peer name, kept for names no peer has yet (a store row read
    /// at start before a reload adds the peer) and applied to every peer at every change.
    private let overrides: Mutex<[String: PeerTierOverride]>

    /// The tier classes in force.
    public var tierClasses: TierClasses { classes.withLock { $0 } }

    /// New tier classes (start, reload): every peer's limits are resolved again, and an override
    /// whose tier is no longer configured lapses (or one whose tier came back applies again).
    public func setTierClasses(_ t: TierClasses) {
        classes.withLock { $0 = t }
        change { _, _ in true }
    }

    /// The runtime tier overrides the registry holds, by peer name (in force or lapsed).
    public var tierOverrides: [String: PeerTierOverride] { overrides.withLock { $0 } }

    /// Sets (or, with nil, ends) the override of the peer called `name`, in one change. Returns
    /// whether the registry changed (a peer's override or tier in force).
    @discardableResult
    public func setOverride(_ name: String, _ o: PeerTierOverride?) -> Bool {
        overrides.withLock { $0[name] = o }
        return change { peers, _ in peers.contains { $0.name == name } }
    }

    /// Replaces every override (tests; a start that read them from the store), in one change.
    public func setOverrides(_ all: [String: PeerTierOverride]) {
        overrides.withLock { $0 = all }
        change { _, _ in true }
    }

    /// A registry holding `peers` (routes from their AllowedIPs) with `overrides` by name.
    public init(_ peers: [GatewayPeer] = [], tiers: TierClasses = TierClasses(), overrides: [String: PeerTierOverride] = [:]) {
        var routes = AllowedIPs()
        for p in peers { for prefix in p.allowedIPs { routes.insert(prefix, peer: Int32(p.handle.rawValue)) } }
        var resolved = peers
        PeerRegistry.applyTiers(&resolved, classes: tiers, overrides: overrides)
        classes = Mutex(tiers)
        self.overrides = Mutex(overrides)
        directory = Mutex(PeerDirectory(version: 0, peers: resolved, routes: routes))
    }

    /// Each peer's override (in force when its tier is configured, else lapsed) and its limits
    /// resolved for the tier in force: the one place a peer's tier is decided.
    private static func applyTiers(_ peers: inout [GatewayPeer], classes: TierClasses, overrides: [String: PeerTierOverride]) {
        for i in peers.indices {
            let o = overrides[peers[i].name]
            let box = o.map { TierOverrideBox($0, inForce: classes.isConfigured($0.tier)) }
            if box != peers[i].overrideBox { peers[i].overrideBox = box }
            let l = classes.resolve(tier: peers[i].tier, peer: peers[i].limitSettings)
            if l != peers[i].limits { peers[i].limits = l }
        }
        GatewayPeer.internLimits(&peers)
    }

    /// The peers now.
    public var current: PeerDirectory { directory.withLock { $0 } }

    /// The version of ``current``: a cheap check whether anything changed since a directory was taken.
    public var version: UInt64 { versionNow.load(ordering: .acquiring) }

    /// Calls `listener(old, new)` after every later change.
    public func onChange(_ listener: @escaping @Sendable (_ old: PeerDirectory, _ new: PeerDirectory) -> Void) {
        changes.withLock { $0.append(listener) }
    }

    /// Adds `peer`, or replaces the peer with its handle (its routes replaced by its AllowedIPs; an
    /// identical prefix owned by another peer moves to this one, as in WireGuard).
    public func put(_ peer: GatewayPeer) {
        change { peers, routes in
            _ = routes.removeAll(peer: Int32(peer.handle.rawValue))
            for p in peer.allowedIPs { routes.insert(p, peer: Int32(peer.handle.rawValue)) }
            if let i = peers.firstIndex(where: { $0.handle == peer.handle }) { peers[i] = peer } else { peers.append(peer) }
            PeerRegistry.release(peer.allowedIPs, takenBy: peer.handle, in: &peers)
            return true
        }
    }

    /// Adds or replaces every peer of `batch` in one change (one new directory, one round of
    /// listeners): what ``put(_:)`` does for each, in order, without walking the routing trie and
    /// every other peer once per peer — a start with 10,000 peers was quadratic.
    public func put(_ batch: [GatewayPeer]) {
        guard !batch.isEmpty else { return }
        change { peers, routes in
            var index: [PeerHandle: Int] = [:]
            for (i, p) in peers.enumerated() { index[p.handle] = i }
            var owner: [IPPrefix: PeerHandle] = [:]
            for peer in batch {
                if let i = index[peer.handle] {
                    _ = routes.removeAll(peer: Int32(peer.handle.rawValue))
                    peers[i] = peer
                } else {
                    index[peer.handle] = peers.count
                    peers.append(peer)
                }
                for p in peer.allowedIPs {
                    routes.insert(p, peer: Int32(peer.handle.rawValue))
                    owner[p] = peer.handle
                }
            }
            // One owner per prefix, as ``put(_:)`` keeps it: the last peer of the batch to claim it.
            for i in peers.indices {
                let h = peers[i].handle
                let lost: (IPPrefix) -> Bool = { p in owner[p].map { $0 != h } ?? false }
                if peers[i].allowedIPs.contains(where: lost) { peers[i].allowedIPs.removeAll(where: lost) }
            }
            return true
        }
    }

    /// Removes the peer with `handle` and its routes; returns it.
    @discardableResult
    public func remove(_ handle: PeerHandle) -> GatewayPeer? {
        var removed: GatewayPeer?
        change { peers, routes in
            guard let i = peers.firstIndex(where: { $0.handle == handle }) else { return false }
            removed = peers.remove(at: i)
            _ = routes.removeAll(peer: Int32(handle.rawValue))
            return true
        }
        return removed
    }

    /// Changes fields of the peer with `handle` other than its AllowedIPs (``setAllowedIPs(_:_:replace:)``
    /// does those). Returns false when there is no such peer or `body` changed nothing.
    @discardableResult
    public func update(_ handle: PeerHandle, _ body: (inout GatewayPeer) -> Void) -> Bool {
        change { peers, _ in
            guard let i = peers.firstIndex(where: { $0.handle == handle }) else { return false }
            var p = peers[i]
            let allowed = p.allowedIPs
            body(&p)
            p.handle = handle
            p.allowedIPs = allowed
            guard p != peers[i] else { return false }
            peers[i] = p
            return true
        }
    }

    /// Replaces (or, without `replace`, extends) the AllowedIPs of the peer with `handle`
    /// (UAPI `replace_allowed_ips` / `allowed_ip`).
    public func setAllowedIPs(_ handle: PeerHandle, _ prefixes: [IPPrefix], replace: Bool) {
        change { peers, routes in
            if replace { _ = routes.removeAll(peer: Int32(handle.rawValue)) }
            for p in prefixes { routes.insert(p, peer: Int32(handle.rawValue)) }
            if let i = peers.firstIndex(where: { $0.handle == handle }) {
                let old = peers[i].allowedIPs
                if replace {
                    peers[i].allowedIPs = prefixes
                } else {
                    var seen = Set(old)
                    peers[i].allowedIPs = old + prefixes.filter { seen.insert($0).inserted }
                }
            }
            PeerRegistry.release(prefixes, takenBy: handle, in: &peers)
            return true
        }
    }

    /// The name a peer added over the UAPI gets: `peer-` and the first 8 characters of its key in
    /// base64 (`/` as `_`, `+` as `-`), longer when another peer already has that name.
    public func runtimeName(for key: WireGuard.PublicKey) -> String {
        let dir = current
        let text = key.base64
        var length = 8
        while true {
            let name = PeerName.fromKey(text, length: length)
            if length >= text.count { return name }
            if let other = dir.named(name), other.publicKey != key { length += 4 } else { return name }
        }
    }

    /// A prefix now routed to `owner` leaves every other peer's AllowedIPs list (as in WireGuard,
    /// where the trie has one owner per prefix), so the lists and the trie agree.
    private static func release(_ prefixes: [IPPrefix], takenBy owner: PeerHandle, in peers: inout [GatewayPeer]) {
        guard !prefixes.isEmpty else { return }
        let taken = Set(prefixes)
        for i in peers.indices where peers[i].handle != owner && peers[i].allowedIPs.contains(where: taken.contains) {
            peers[i].allowedIPs.removeAll(where: taken.contains)
        }
    }

    /// Applies `body` (false: nothing changed) and tells the listeners; returns whether it changed.
    @discardableResult
    private func change(_ body: (inout [GatewayPeer], inout AllowedIPs) -> Bool) -> Bool {
        changes.withLock { listeners in
            let step = directory.withLock { d -> (PeerDirectory, PeerDirectory)? in
                var peers = d.all
                var routes = d.routes
                guard body(&peers, &routes) else { return nil }
                PeerRegistry.applyTiers(&peers, classes: classes.withLock { $0 }, overrides: overrides.withLock { $0 })
                let old = d
                d = PeerDirectory(version: old.version &+ 1, peers: peers, routes: routes)
                versionNow.store(d.version, ordering: .releasing)
                return (old, d)
            }
            guard let (old, new) = step else { return false }
            for l in listeners { l(old, new) }
            return true
        }
    }
}
