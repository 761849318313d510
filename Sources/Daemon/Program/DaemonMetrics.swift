import Core
import ControlProtocol
import Engine
import Runtime
import Sessions
import Synchronization
import SystemIO

/// The daemon's metrics: gathers a `MetricsSnapshot` from what `status` and `peers` already read
/// (engine counters, the watchdog's view, the store writer), counts reloads, and serves
/// `MetricsListen` with an `HTTPListener`. Scraping takes no lock the per-packet path holds
/// longer than it takes for `tunnelctl status`: atomics, snapshots swapped under their own locks,
/// the flow lock once per scrape.
public final class DaemonMetrics: Sendable {
    let engine: GatewayEngine
    let sessions: SessionService
    let status: @Sendable () -> StatusReply
    private let reloads = Atomic<UInt64>(0)
    private let reloadErrors = Atomic<UInt64>(0)

    /// Metrics over `engine` and `sessions`; `status` builds the status reply (as the control socket does).
    public init(engine: GatewayEngine, sessions: SessionService, status: @escaping @Sendable () -> StatusReply) {
        self.engine = engine
        self.sessions = sessions
        self.status = status
    }

    /// A reload (config or policy) was applied (`ok`) or refused for errors.
    public func noteReload(ok: Bool) {
        if ok { reloads.add(1, ordering: .relaxed) } else { reloadErrors.add(1, ordering: .relaxed) }
    }

    /// Everything `/metrics` shows, now.
    public func snapshot() -> MetricsSnapshot {
        let st = status()
        let now = sessions.time.now()
        let peers = sessions.annotate(engine.peerStatuses()).map { p -> MetricsSnapshot.Peer in
            let handle = engine.peer(named: p.name)?.handle
            let packets = handle.flatMap { engine.device.packetCounts(of: $0) } ?? (0, 0)
            let view = sessions.watchdog.view(p.name)
            var remaining: Int64?
            if p.session == .connected, p.tier == .free, let until = p.allowedUntilMs { remaining = until - now }
            return MetricsSnapshot.Peer(
                name: p.name, tier: p.tier, rxBytes: p.rxBytes, txBytes: p.txBytes, rxPackets: packets.rx,
                txPackets: packets.tx, lastHandshakeMs: p.lastHandshakeMs, session: p.session, remainingMs: remaining,
                refusals: view?.refusals ?? 0, limits: p.limits, quotaUsed: p.quotaUsed)
        }
        let flows = engine.flowTableSnapshot
        var store = MetricsSnapshot.Store()
        if let writer = sessions.history.writer {
            let stats = writer.stats()
            store = MetricsSnapshot.Store(queueDepth: writer.queueDepth, failedBatches: stats.failedBatches, outages: stats.outages)
        }
        return MetricsSnapshot(
            status: st, peers: peers, rules: engine.policyShowReply().rules, flowCapacity: flows.capacity,
            flowStats: flows.stats, store: store, handshakes: engine.counters.handshakes.load(ordering: .relaxed),
            cookieReplies: engine.counters.cookieReplies.load(ordering: .relaxed), handshakeBacklog: engine.handshakeBacklog,
            underLoad: engine.underLoad, reloads: reloads.load(ordering: .relaxed),
            reloadErrors: reloadErrors.load(ordering: .relaxed))
    }

    /// The exposition text now (`/metrics`, control request `metrics`).
    public func text() -> String { MetricsText.render(snapshot()) }

    /// Serves `GET /metrics` on `endpoint` (and a one-line index on `/`).
    public func listen(on endpoint: Endpoint, log: Logger) throws(SystemError) -> HTTPListener {
        try HTTPListener(endpoint: endpoint) { [self] request in
            guard request.method == "GET" || request.method == "HEAD" else { return .methodNotAllowed }
            let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
            switch path {
            case "/metrics": return HTTPResponse(status: 200, contentType: MetricsText.contentType, body: text())
            case "/": return HTTPResponse(status: 200, body: "tunneld \(status().version): metrics at /metrics\n")
            default: return .notFound("tunneld serves /metrics")
            }
        }
    }
}
