import Engine
import Core
import Sessions
import Control
import Glibc
import Runtime
import Store
import Synchronization

/// Everything issue 5 adds to the running daemon, wired in one place: the store (crash recovery,
/// heartbeat), the `History` recorder hooked into the engine, the `Watchdog` with the stored
/// windows and tier overrides, and its `WatchdogTicker` (which also polls the store for
/// `tunnelctl peer tier` changes and moves the heartbeat).
public final class SessionService: @unchecked Sendable {
    // Safe: `ticker` and `tierStore` are set once in `start` (before the ticker thread exists) and
    // then touched only by the ticker thread's body and `stop` (after the thread is joined).
    /// The recorder hooked into the engine.
    public let history: History
    /// The free-session watchdog.
    public let watchdog: Watchdog
    let engine: GatewayEngine
    let log: Logger
    let storePath: String
    private var ticker: WatchdogTicker?
    private var tierStore: StateStore?
    private var appliedOverrides: [String: PeerTier]

    /// Opens the store at `config.storePath`, closes the sessions a crash left open (at the last
    /// time the store proves the daemon ran), and hooks history and the watchdog into `engine`.
    /// Call before adding peers; a store that cannot be opened is logged and the gateway runs
    /// with the watchdog in memory only (records dropped and counted).
    public init(engine: GatewayEngine, interface: InterfaceConfig, log: Logger, recordFlows: Bool = true) {
        self.engine = engine
        self.log = log
        storePath = interface.storePath
        let now = engine.clock.wallMilliseconds()
        var windows: [String: WindowDates] = [:]
        var overrides: [String: PeerTier] = [:]
        var idBase: Int64 = 0
        var writer: StoreWriter? = nil
        do {
            let store = try StateStore(path: storePath)
            let proven = try store.lastProvenAlive()
            let closed = try store.closeAllOpenSessionsAsCrash(at: proven ?? now)
            if closed > 0 {
                log.warning("store: \(closed) session(s) left open by a crash closed at \(proven.map(String.init) ?? "now") (end reason crash)")
            }
            try store.daemonStarted(pid: Int64(getpid()), at: now)
            for w in try store.windows() { windows[w.peer] = WindowDates(allowedUntil: w.allowedUntil, reconnectAt: w.reconnectAt) }
            for o in try store.tierOverrides() { overrides[o.peer] = o.tier }
            idBase = try store.maxFlowId()
            engine.seedFlowIDs(after: UInt64(max(0, idBase)))
            tierStore = store
            writer = try StoreWriter(path: storePath) { e in log.error("store: \(e)") }
        } catch {
            log.error("store \(interface.storePath): \(error); running without history (windows kept in memory only)")
        }
        appliedOverrides = overrides
        history = History(writer: writer, clock: engine.clock, idBase: 0, peers: engine.registry, recordFlows: recordFlows)
        watchdog = Watchdog(
            config: WatchdogConfig(
                freeSessionMs: interface.freeSession.milliseconds, freePauseMs: interface.freePause.milliseconds,
                intervalMs: interface.watchdogInterval.milliseconds),
            peers: engine.registry, device: engine, sink: history, windows: windows, overrides: overrides)
        engine.events = history
        engine.admission = WatchdogAdmission(watchdog, clock: engine.clock)
        // A peer removed (UAPI, reload) with a live session: its session ends `removed`.
        let (watchdog, clock) = (watchdog, engine.clock)
        engine.registry.onChange { old, new in watchdog.peersChanged(from: old, to: new, now: clock.wallMilliseconds()) }
    }

    /// After the peers are added, before the engine starts: applies tier overrides to policy,
    /// refuses every peer in its pause (a restarted daemon never lets one in), starts the ticker.
    public func start() throws {
        applyOverrides(appliedOverrides, log: false)
        watchdog.tick(now: engine.clock.wallMilliseconds())
        ticker = try WatchdogTicker(intervalMs: watchdog.config.intervalMs, log: log) { [self] reason in
            if reason != .interval { log.notice("watchdog: \(reason.rawValue); re-checking windows") }
            pollOverrides()
            let now = engine.clock.wallMilliseconds()
            watchdog.tick(now: now)
            history.heartbeat(now: now)
        }
    }

    /// Daemon shutdown (after the engine stopped): sessions end `shutdown`, the writer drains.
    public func stop() {
        ticker?.stop()
        ticker = nil
        let now = engine.clock.wallMilliseconds()
        watchdog.shutdown(now: now)
        history.heartbeat(now: now)
        history.writer?.close()
        tierStore = nil
    }

    /// `tunnelctl kick`: the session ends `admin-kick`.
    public func kicked(_ name: String) {
        guard let p = engine.peer(named: name) else { return }
        watchdog.kicked(p.handle, now: engine.clock.wallMilliseconds())
    }

    /// The peers reply with the watchdog's dates and state.
    public func annotate(_ peers: [Control.PeerStatus]) -> [Control.PeerStatus] {
        let now = engine.clock.wallMilliseconds()
        return peers.map { s in
            var s = s
            guard let v = watchdog.view(s.name) else { return s }
            s.tier = v.tier
            s.allowedUntilMs = v.window?.allowedUntil
            s.reconnectAtMs = v.window?.reconnectAt
            if case .paused = WatchdogRules.phase(now: now, tier: v.tier, window: v.window) { s.session = .paused }
            return s
        }
    }

    private func pollOverrides() {
        guard let store = tierStore else { return }
        do {
            var next: [String: PeerTier] = [:]
            for o in try store.tierOverrides() { next[o.peer] = o.tier }
            if next != appliedOverrides {
                appliedOverrides = next
                applyOverrides(next, log: true)
            }
        } catch {
            log.warning("store: reading tier overrides: \(error)")
        }
    }

    private func applyOverrides(_ overrides: [String: PeerTier], log logChanges: Bool) {
        for p in engine.peers { engine.setTier(p.handle, overrides[p.name] ?? configTier(p.name) ?? p.tier) }
        let changed = watchdog.setOverrides(overrides, now: engine.clock.wallMilliseconds())
        if logChanges {
            for (p, t) in changed {
                log.notice("peer \(p.name): tier \(t.rawValue) (tunnelctl peer tier)")
                history.record(.marker(at: engine.clock.wallMilliseconds(), label: "tier: \(p.name) \(t.rawValue)", detail: nil))
            }
        }
    }

    private func configTier(_ name: String) -> PeerTier? {
        engine.registry.current.named(name)?.configTier
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let (s, a) = components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}
