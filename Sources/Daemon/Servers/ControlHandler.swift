import ControlProtocol
import Core
import Engine
import Runtime

/// The daemon's answers on `control.sock`: one request in, one response out (docs/control.md §2),
/// from the engine, the session service and the observer it is given. `ControlServer` owns the
/// socket, framing, credentials and limits and calls ``respond(to:from:)`` on its thread; this
/// type owns what each request means. What only the program can assemble (the `status` reply,
/// the metrics text, a whole-config reload) comes in as closures, so the handler needs nothing
/// of `Program/`.
struct ControlHandler: Sendable {
    let engine: GatewayEngine
    let sessions: SessionService
    let observe: Observe
    /// The `[Interface]` `PolicyDirectory` that `policyReload` reads.
    let policyDirectory: String
    let log: Logger
    /// The `status` reply (engine counters, stores, status page, shared store's retention).
    let status: @Sendable () -> StatusReply
    /// The Prometheus text `MetricsListen` serves on `/metrics`.
    let metricsText: @Sendable () -> String
    /// Told whether each policy reload succeeded (the reload counters).
    let policyReloaded: @Sendable (Bool) -> Void
    /// Re-reads the whole config file and applies it (`reload`, the same path as SIGHUP).
    let reloadConfig: @Sendable () -> ControlResponse

    /// The response to `request`. Every caller reaching here is authorised (`ControlServer`
    /// checked `SO_PEERCRED`); no request's answer depends on who asked.
    func respond(to request: ControlRequest, from caller: PeerCredentials) -> ControlResponse {
        switch request {
        case .status:
            return .status(status())
        case .metrics:  // tunnelctl metrics: the same text as MetricsListen's /metrics
            return .metrics(metricsText())
        case .peers:
            return .peers(sessions.annotate(engine.peerStatuses()))
        case .policyReload:
            let reply = engine.reloadPolicy(directory: policyDirectory)
            policyReloaded(reply.succeeded)
            return .policyReload(reply)
        case .policyShow:
            return .policyShow(engine.policyShowReply())
        case .kick(let name):
            return kick(name)
        case .liveFlows(let peer):  // tunnelctl explain 'FLOW' on a flow still open
            return .liveFlows(sessions.liveFlows(peer: peer))
        case .capture(let enabled, let detail):  // tunnelctl capture on|off (docs/capture.md)
            return observe.capture(enabled: enabled, detail: detail)
        case .peerTier(let name, let tier):  // tunnelctl peer tier: the daemon owns the change
            return setTier(name, tier)
        case .reload:  // tunnelctl reload: the whole config, applied like wg syncconf
            return reloadConfig()
        case .unknown(let type):
            return .failure(.unknownRequest, "unknown request '\(type)'")
        }
    }

    /// Ends `name`'s session now (its keypairs dropped; it handshakes again if it may).
    private func kick(_ name: String) -> ControlResponse {
        guard let p = engine.peer(named: name) else {
            return .failure(.notFound, "no peer named '\(name)' (tunnelctl peers lists them)")
        }
        let had = engine.device.status(of: p.handle)?.hasCurrentKeypair ?? false
        engine.kick(p.handle)
        sessions.kicked(name)
        log.notice("peer \(name): kicked by admin")
        return .kick(KickReply(peer: name, endedSession: had))
    }

    /// Sets `name`'s tier override through the session service (registry and stores).
    private func setTier(_ name: String, _ tier: PeerTier) -> ControlResponse {
        switch sessions.setTier(peer: name, tier) {
        case .success(let before):
            return .peerTier(PeerTierReply(peer: name, tier: tier, previous: before,
                                           stored: !(sessions.ledger?.isFailing ?? true)))
        case .failure(.unknownPeer):
            return .failure(.notFound, "no peer named '\(name)' (tunnelctl peers lists them)")
        case .failure(.unknownTier(let t)):
            let known = engine.registry.tierClasses.names.map(\.rawValue).joined(separator: ", ")
            return .failure(.notFound, "tier '\(t)' is not configured (configured: \(known)); add a [Tier \(t)] section and reload")
        }
    }
}
