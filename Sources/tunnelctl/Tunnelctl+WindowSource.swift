import Core
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Store

/// Where `session` and `explain PEER` read a free peer's window and its tier: the
/// store protocol (`SharedState`) of whichever store answers — with a shared store
/// (`Store = postgresql://…` or `sqlite:/…`), the window every gateway enforces, whichever gateway
/// opened it, and the tier overrides made on any of them; with `Store = local` or `--local`, this
/// router's own `state.db` through the same questions (`LocalSharedState`), which the daemon keeps
/// in step with a shared store one sync pass behind. A shared store that cannot be read is an
/// error that names `--local`, never this router's copy passed off as every gateway's answer.
struct WindowSource {
    /// This router's store (nil: none yet).
    var local: StateStore?
    /// The store answering (nil: `Store = local` and no `state.db` yet: no windows, no overrides).
    private var backend: (any SharedState)?
    /// True when the answers come from a shared store (every gateway's).
    private(set) var isShared = false
    /// The windows by peer.
    private var windows: [String: SharedWindow] = [:]
    /// The tier overrides recorded, by peer (in force unless their tier is not configured).
    private var tiers: [String: SharedTierChange] = [:]
    /// The configured tier classes (nil: every recorded override is taken as in force).
    private var classes: TierClasses?
    /// What the running tunneld's registry says, by peer, when it was asked: it wins.
    private var live: [String: TierFacts] = [:]

    /// This router's own store as the source (`Store = local`, `--local`), read through
    /// `LocalSharedState` for `gateway`.
    init(local: StateStore?, gateway: String = "") throws {
        self.local = local
        try load(SharedStoreSetting.local.backend(local: local, gateway: gateway, passFile: nil))
    }

    private init(own: StateStore?) { local = own }

    /// Reads every window and override `backend` holds (one snapshot).
    private mutating func load(_ backend: (any SharedState)?) throws {
        self.backend = backend
        guard let backend else { return }
        var windows: [String: SharedWindow] = [:]
        var tiers: [String: SharedTierChange] = [:]
        try backend.readingOneSnapshot {
            for w in try backend.windows(changedAfter: 0).windows { windows[w.peer] = w }
            for t in try backend.tiers(changedAfter: 0).changes { tiers[t.peer] = t.tier == nil ? nil : t }
        }
        self.windows = windows
        self.tiers = tiers
    }

    /// The window of `peer` (its use summed over every gateway with a shared store) and the
    /// gateway that opened it (nil for this router's own store: every window there is its own).
    func window(_ peer: String) throws -> (window: SessionWindow, gateway: String?)? {
        guard let w = windows[peer] else { return nil }
        return (SessionWindow(peer: peer, dates: w.dates, usedUp: w.usedUp, usedDown: w.usedDown), isShared ? w.gateway : nil)
    }

    /// When `peer`'s stored window opened (epoch ms); nil when the store does not know (a window
    /// stored before openings were recorded).
    func openedAt(_ peer: String) -> Int64? {
        windows[peer].flatMap { $0.openedAt > 0 ? $0.openedAt : nil }
    }

    /// The refused handshakes of `peer` during the pause after the window that ended at
    /// `allowedUntil`: on every gateway with a shared store (as far as they have shipped them),
    /// else on this router.
    func pauseRefusals(_ peer: String, allowedUntil: Int64) throws -> [Refusal] {
        guard let backend else { return [] }
        return try backend.historyRefusals(since: allowedUntil, peer: peer, gateway: nil, limit: 10_000)
            .map(\.row).filter { $0.kind == .session && $0.window == allowedUntil }
    }

    /// `peer`'s tier in force: the override (shared: made on any gateway) unless its tier is not
    /// configured, else its config's; the running tunneld's answer when it was asked.
    func tier(of peer: PeerConfig) throws -> PeerTier { tierFacts(of: peer).inForce }

    /// `peer`'s tier and where it comes from: the one answer every tunnelctl view gives
    /// (`peers`, `peer list|show`, `session`, `explain`, `policy test`).
    func tierFacts(of peer: PeerConfig) -> TierFacts {
        if let l = live[peer.name] { return l }
        return TierFacts(configured: peer.tier, override: tiers[peer.name].flatMap { t in t.tier.map { ($0, t.changedAt) } },
                         classes: classes, shared: isShared, daemon: false)
    }

    /// Takes the running tunneld's tiers (its registry: the owner) over the store's.
    mutating func adoptLive(_ peers: [PeerStatus]) {
        for p in peers {
            guard let configured = p.configuredTier else { continue }  // an older tunneld
            live[p.name] = TierFacts(configured: configured, inForce: p.tier, overrideSince: p.tierSinceMs,
                                     origin: p.tierOrigin ?? "config", lapsed: p.lapsedTier)
        }
    }

    /// The one way tunnelctl learns the peers' tiers (and windows): the running tunneld's answer
    /// (`live`, its registry: the owner) where it gave one, else the store — shared when
    /// configured — and the configuration, by the registry's rule.
    /// `localOption`: the command takes `--local` (the error names it).
    static func open(_ config: TunnelConfig, local: Bool, live: [PeerStatus]?, localOption: Bool = true) throws -> WindowSource {
        var s = try open(config, local: local, localOption: localOption)
        if let live { s.adoptLive(live) }
        return s
    }

    /// The source for `config`: the shared store unless `local` or `Store = local`.
    static func open(_ config: TunnelConfig, local: Bool, localOption: Bool = true) throws -> WindowSource {
        let own = try CLIStore.read(config)
        let iface = config.interface
        let setting: SharedStoreSetting = local ? .local : iface.store
        var s = WindowSource(own: own)
        s.isShared = setting.isShared
        s.classes = config.tiers
        do {
            try s.load(setting.backend(local: own, gateway: iface.gatewayNameInForce, passFile: iface.storePassFile, readOnly: true))
            return s
        } catch let e as StoreError where !setting.isShared {
            throw CLIError.failure(e.description)
        } catch {
            guard setting.isShared else { throw error }
            throw CLIError.failure("cannot read the shared store \(setting.text): \(error)\n"
                + (localOption ? "  the window every gateway enforces is there; this gateway's own copy (one sync pass behind): add --local"
                    : "  the tiers every gateway applies are there; with tunneld running, it answers with its own"))
        }
    }
}

/// A peer's tier and where it comes from, as tunnelctl shows it.
struct TierFacts: Hashable {
    /// `Tier =` of its `[Peer]` section.
    var configured: PeerTier
    /// What `tier` rules match and limits resolve with.
    var inForce: PeerTier
    /// When the override in force was set (nil: none in force).
    var overrideSince: Int64?
    /// `config`, `admin` (tunnelctl peer tier), `shared` (the shared store), as tunneld names it.
    var origin: String
    /// An override that is recorded but lapsed: its tier is not configured.
    var lapsed: PeerTier?
    /// What the reader should know about where this was read (nil: nothing).
    var note: String? = nil

    init(configured: PeerTier, inForce: PeerTier, overrideSince: Int64?, origin: String, lapsed: PeerTier?) {
        self.configured = configured
        self.inForce = inForce
        self.overrideSince = overrideSince
        self.origin = origin
        self.lapsed = lapsed
    }

    /// From the store: the registry's rule (`PeerRegistry`), an override whose tier is not a
    /// configured class lapses to the configured tier.
    init(configured: PeerTier, override: (tier: PeerTier, since: Int64)?, classes: TierClasses?, shared: Bool, daemon: Bool) {
        guard let o = override else {
            self.init(configured: configured, inForce: configured, overrideSince: nil, origin: "config", lapsed: nil)
            return
        }
        if let classes, !classes.isConfigured(o.tier) {
            self.init(configured: configured, inForce: configured, overrideSince: nil, origin: "config", lapsed: o.tier)
        } else {
            self.init(configured: configured, inForce: o.tier, overrideSince: o.since, origin: shared ? "shared" : "admin", lapsed: nil)
        }
    }

    /// `trial (tunnelctl peer tier, since 2026-12-02T10:00:00.000Z; configured: free)`, `free`,
    /// `free (override trial lapsed: no [Tier trial] configured)`.
    var text: String {
        let note = self.note.map { "; \($0)" } ?? ""
        if let l = lapsed { return "\(inForce) (override \(l) lapsed: no [Tier \(l)] configured\(note))" }
        guard let since = overrideSince else { return note.isEmpty ? inForce.rawValue : "\(inForce) (\(note.dropFirst(2)))" }
        let who = origin == "shared" ? "tunnelctl peer tier, shared store" : "tunnelctl peer tier"
        return "\(inForce) (\(who), since \(TimeText.iso(since)); configured: \(configured)\(note))"
    }
}
