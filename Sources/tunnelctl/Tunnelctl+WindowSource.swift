import Core
import Control
import Foundation
import Store

/// Where `session` and `explain PEER` read a free peer's window and its tier (issue 19): with a
/// shared store (`Store = postgresql://…` or `sqlite:/…`), from it — the window every gateway
/// enforces, whichever gateway opened it, and the tier overrides made on any of them; `--local`
/// (or `Store = local`) reads this router's own `state.db`, which the daemon keeps in step with the
/// shared store one sync pass behind. A shared store that cannot be read is an error that names
/// `--local`, never this router's copy passed off as every gateway's answer.
struct WindowSource {
    /// This router's store (nil: none yet).
    var local: StateStore?
    /// The shared store, when it is the source (its history holds every gateway's refusals).
    private var shared: (any SharedState)?
    /// The shared store's windows by peer, when it is the source.
    private var sharedWindows: [String: SharedWindow]?
    /// The shared store's tier overrides in force, by peer.
    private var sharedTiers: [String: PeerTier] = [:]

    /// This router's own store as the source (`Store = local`, `--local`).
    init(local: StateStore?) { self.local = local }

    /// True when the answers come from the shared store.
    var isShared: Bool { sharedWindows != nil }

    /// The window of `peer` (its use summed over every gateway with a shared store) and the
    /// gateway that opened it (nil for this router's own store, which does not record it).
    func window(_ peer: String) throws -> (window: SessionWindow, gateway: String?)? {
        if let shared = sharedWindows {
            guard let w = shared[peer] else { return nil }
            return (SessionWindow(peer: peer, dates: w.dates, usedUp: w.usedUp, usedDown: w.usedDown), w.gateway)
        }
        return try local?.window(peer: peer).map { ($0, nil) }
    }

    /// The refused handshakes of `peer` during the pause after the window that ended at
    /// `allowedUntil`: on every gateway with a shared store (as far as they have shipped them),
    /// else on this router.
    func pauseRefusals(_ peer: String, allowedUntil: Int64) throws -> [Refusal] {
        if let shared {
            return try shared.historyRefusals(since: allowedUntil, peer: peer, gateway: nil, limit: 10_000)
                .map(\.row).filter { $0.kind == .session && $0.window == allowedUntil }
        }
        return try local?.refusals(peer: peer, kind: .session).filter { $0.window == allowedUntil } ?? []
    }

    /// `peer`'s tier: the override in force (shared: made on any gateway), else its config's.
    func tier(of peer: PeerConfig) throws -> PeerTier {
        if isShared { return sharedTiers[peer.name] ?? peer.tier }
        return try Tunnelctl.tier(of: peer, local)
    }

    /// The source for `config`: the shared store unless `local` or `Store = local`.
    static func open(_ config: TunnelConfig, local: Bool) throws -> WindowSource {
        let own = try Tunnelctl.readStore(config)
        let setting = config.interface.store
        guard setting.isShared, !local else { return WindowSource(local: own) }
        do {
            let shared = try setting.open(passFile: config.interface.storePassFile, readOnly: true)!
            var windows: [String: SharedWindow] = [:]
            for w in try shared.windows(changedAfter: 0).windows { windows[w.peer] = w }
            var tiers: [String: PeerTier] = [:]
            for t in try shared.tiers(changedAfter: 0).changes { tiers[t.peer] = t.tier }
            var s = WindowSource(local: own)
            s.shared = shared
            s.sharedWindows = windows
            s.sharedTiers = tiers.compactMapValues { $0 }
            return s
        } catch {
            throw CLIError.failure("cannot read the shared store \(setting.text): \(error)\n"
                + "  the window every gateway enforces is there; this gateway's own copy (one sync pass behind): add --local")
        }
    }
}
