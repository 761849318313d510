import Core
import Control
import Foundation
import Store

/// Where `session` and `explain PEER` read a free peer's window and its tier (issue 19): the
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
    /// The tier overrides in force, by peer.
    private var tiers: [String: PeerTier] = [:]

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
        var tiers: [String: PeerTier] = [:]
        try backend.readingOneSnapshot {
            for w in try backend.windows(changedAfter: 0).windows { windows[w.peer] = w }
            for t in try backend.tiers(changedAfter: 0).changes { tiers[t.peer] = t.tier }
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

    /// The refused handshakes of `peer` during the pause after the window that ended at
    /// `allowedUntil`: on every gateway with a shared store (as far as they have shipped them),
    /// else on this router.
    func pauseRefusals(_ peer: String, allowedUntil: Int64) throws -> [Refusal] {
        guard let backend else { return [] }
        return try backend.historyRefusals(since: allowedUntil, peer: peer, gateway: nil, limit: 10_000)
            .map(\.row).filter { $0.kind == .session && $0.window == allowedUntil }
    }

    /// `peer`'s tier: the override in force (shared: made on any gateway), else its config's.
    func tier(of peer: PeerConfig) throws -> PeerTier { tiers[peer.name] ?? peer.tier }

    /// The source for `config`: the shared store unless `local` or `Store = local`.
    static func open(_ config: TunnelConfig, local: Bool) throws -> WindowSource {
        let own = try CLIStore.read(config)
        let iface = config.interface
        let setting: SharedStoreSetting = local ? .local : iface.store
        var s = WindowSource(own: own)
        s.isShared = setting.isShared
        do {
            try s.load(setting.backend(local: own, gateway: iface.gatewayNameInForce, passFile: iface.storePassFile, readOnly: true))
            return s
        } catch let e as StoreError where !setting.isShared {
            throw CLIError.failure(e.description)
        } catch {
            guard setting.isShared else { throw error }
            throw CLIError.failure("cannot read the shared store \(setting.text): \(error)\n"
                + "  the window every gateway enforces is there; this gateway's own copy (one sync pass behind): add --local")
        }
    }
}
