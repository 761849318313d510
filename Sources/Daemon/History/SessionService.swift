import Engine
import Core
import Sessions
import Config
import ControlProtocol
import Glibc
import Runtime
import Store
import Synchronization

/// The history side of the running daemon, wired in one place: the store (crash recovery,
/// heartbeat), the `History` recorder hooked into the engine, the `Watchdog` with the stored
/// windows, the stored tier overrides handed to the registry (their one owner), and the
/// `WatchdogTicker` (which also moves the heartbeat).
public final class SessionService: @unchecked Sendable {
    // Safe: `ticker` and `heartbeatStore` are set once in init/`start` (before the ticker thread
    // exists) and then touched only by the ticker thread's body and `stop` (after the thread is
    // joined), like `lastPassBootMs`; tier changes are serialised by their Mutex.
    /// The recorder hooked into the engine.
    public let history: History
    /// The free-session watchdog.
    public let watchdog: Watchdog
    /// The watchdog's clock: wall-clock dates that advance with CLOCK_BOOTTIME (never step).
    public let time: WatchdogTime
    /// The watchdog's own store connection (windows, refusals, tier changes; nil without a store).
    public var ledger: WindowLedger? { history.ledger }
    let engine: GatewayEngine
    let log: Logger
    let storePath: String
    private var ticker: WatchdogTicker?
    private var heartbeatStore: StateStore?
    /// When the watchdog pass last ran, on the boot clock (ticker thread only).
    private var lastPassBootMs: Int64 = 0
    /// While the store could not be opened at start: when to try again, the backoff, and since
    /// when it has been unavailable (ticker thread only, after init).
    private var storeRetry: (at: Int64, delayMs: Int64, since: Int64)?
    /// Serialises tier changes (admin, shared store, a late store), so the registry, the store
    /// and the shared store get them in one order. The overrides themselves are the registry's.
    private let tierChanges = Mutex(())
    /// Whether peer changes are events yet (not while the configured peers are added at start).
    private let peerEvents = Atomic<Bool>(false)
    /// The restrictions in force (peer-disable events for new ones).
    private let restrictions = Mutex<[String: Watchdog.Restriction]>([:])
    /// Where the restrictions come from: this gateway's config (nil before the first one) and,
    /// with a shared store, the latest `Disabled` / `Expires` change of any gateway per peer,
    /// which wins over the config (docs/scale-out.md "Disabled and Expires").
    private struct Admission {
        var config: [String: Watchdog.Restriction]?
        var shared: [String: SharedAdmission] = [:]
    }
    private let admission = Mutex(Admission())
    /// This gateway's name (`GatewayName`, else the host name), in the shared store and on the windows it opens.
    private let gatewayName: String

    /// The shared store's sync (`Store = postgresql://…`); nil with `Store = local`.
    public let shared: SharedSync?
    /// The gateway name history is journalled under for the shared store (nil: local).
    private let journalGateway: String?

    /// The restriction in force for `name` (`Disabled`, `Expires`): the config's, or the shared
    /// store's latest change of any gateway; nil: none.
    public func restriction(of name: String) -> Watchdog.Restriction? { restrictions.withLock { $0[name] } }

    /// Opens the store at `config.storePath`, closes the sessions a crash left open (at the last
    /// time the store proves the daemon ran), moves the stored windows back when the wall clock is
    /// behind that time (`StartClock`), and hooks history and the watchdog into `engine`. Call
    /// before adding peers; a store that cannot be opened is logged and the gateway runs with the
    /// watchdog in memory only (records dropped and counted).
    ///
    /// With `shared` (a connection factory for the shared store) windows and tier
    /// overrides are shared with the other gateways naming the same store as `gateway`.
    public init(engine: GatewayEngine, interface: InterfaceConfig, log: Logger, recordFlows: Bool = true,
                shared connect: (@Sendable () throws -> any SharedState)? = nil, gateway: String = "", backend: String = "postgresql")
    {
        self.engine = engine
        self.log = log
        storePath = interface.storePath
        journalGateway = connect == nil ? nil : gateway
        gatewayName = gateway
        time = WatchdogTime(clock: engine.clock)
        let now = time.now()
        var windows: [String: WindowDates] = [:]
        var used: [String: ByteUse] = [:]
        var overrides: [String: PeerTierOverride] = [:]
        var writer: StoreWriter? = nil
        var ledger: WindowLedger? = nil
        var startMarker: (String, String)? = nil
        do {
            let opened = try SessionService.openStore(storePath, now: now, log: log, gateway: gateway, journal: connect == nil ? nil : gateway)
            windows = opened.windows
            used = opened.used
            overrides = opened.overrides
            startMarker = opened.marker
            engine.seedFlowIDs(after: UInt64(max(0, opened.maxFlowId)))
            engine.seedPolicyGeneration(after: UInt64(max(0, opened.maxGeneration)))
            heartbeatStore = opened.store
            writer = opened.writer
            ledger = opened.ledger
        } catch {
            log.error("store \(interface.storePath): \(error); running without history (windows kept in memory only); "
                + "retrying with backoff")
            storeRetry = (at: now + 1_000, delayMs: 1_000, since: now)
            // Flow ids must not collide with rows of a store that opens later: start them far
            // above any id a store can hold from earlier runs (each run starts above the last max).
            engine.seedFlowIDs(after: UInt64(max(0, now)) &* 1_000)
        }
        // The stored overrides (`tunnelctl peer tier`, with or without the daemon) are the
        // registry's from now on: it applies them to the peers added next.
        engine.registry.setOverrides(overrides)
        history = History(writer: writer, clock: engine.clock, idBase: 0, peers: engine.registry, ledger: ledger,
                          recordFlows: recordFlows)
        if let (label, detail) = startMarker { history.record(.marker(at: now, label: label, detail: detail)) }
        // The free window of this interface (tunneld then installs the config's tier classes,
        // which carry the same FreeSession/FreePause).
        engine.registry.setTierClasses(interface.tierClasses(engine.registry.tierClasses.classes))
        let registry = engine.registry
        let clockTime = time
        let sync = connect.map { connect in
            SharedSync(gateway: gateway, backend: backend, log: log, quotas: engine.quotas,
                       handle: { registry.current.named($0)?.handle }, now: { clockTime.now() },
                       journalPath: interface.storePath, connect: connect)
        }
        shared = sync
        let events = WatchdogEvents(history, log: log, peers: engine.registry)
        watchdog = Watchdog(
            config: WatchdogConfig(intervalMs: interface.watchdogInterval.milliseconds),
            peers: engine.registry, device: engine, sink: sync.map { SharedWindowSink(events, sync: $0) } ?? events,
            windows: windows, used: used, quotas: engine.quotas)
        if let sync { watchdog.setAuthority(sync) }
        engine.events = history
        engine.admission = WatchdogAdmission(watchdog, time: time)
        // A peer removed (UAPI, reload) with a live session: its session ends `removed`.
        let (watchdog, time) = (watchdog, time)
        engine.registry.onChange { old, new in watchdog.peersChanged(from: old, to: new, now: time.now()) }
        // peer-add / peer-remove / tier-change events, once the configured peers are in (`start`):
        // every change of a tier in force (override set, ended or lapsed; `Tier =` reloaded) is
        // one event and one marker, told by the registry that decided it.
        engine.registry.onChange { [weak self] old, new in
            guard let self, self.peerEvents.load(ordering: .relaxed) else { return }
            let log = self.log
            for p in new.all where old.named(p.name) == nil { log.event(.peerAdd(peer: p.name, tier: p.tier)) }
            for p in old.all where new.named(p.name) == nil { log.event(.peerRemove(peer: p.name)) }
            for p in new.all {
                guard let was = old[p.handle], was.name == p.name, was.tier != p.tier else { continue }
                log.event(.tierChange(peer: p.name, from: was.tier, to: p.tier))
                self.history.record(.marker(at: self.time.now(), label: "tier: \(p.name) \(p.tier.rawValue)",
                                            detail: "from=\(was.tier.rawValue) origin=\(p.tierOrigin.rawValue)"
                                                + (p.lapsedTierOverride.map { " lapsed=\($0.tier.rawValue)" } ?? "")))
            }
        }
    }

    /// After the peers are added, before the engine starts: refuses every peer in its pause (a
    /// restarted daemon never lets one in), starts the ticker.
    public func start() throws {
        peerEvents.store(true, ordering: .relaxed)
        lastPassBootMs = Int64(engine.clock.boottimeNanoseconds() / 1_000_000)
        watchdog.tick(now: time.now())
        let watchdog = self.watchdog
        shared?.start(adopt: { grants, now in watchdog.adoptShared(grants, now: now) },
                      applyTiers: { [weak self] changes in self?.applySharedTiers(changes) },
                      applyAdmissions: { [weak self] changes in self?.applySharedAdmissions(changes) })
        // The ticker wakes every second (or every WatchdogInterval when shorter): each wake-up
        // applies a clock step and moves the heartbeat, so crash recovery closes sessions and flows
        // at most ~1 s before a crash; the watchdog pass runs every WatchdogInterval, and at once
        // on a clock change or a resume.
        let interval = watchdog.config.intervalMs
        ticker = try WatchdogTicker(intervalMs: min(interval, 1_000), log: log) { [self] reason in
            if reason != .interval { log.notice("watchdog: \(reason.rawValue); re-checking windows") }
            let stepped = syncClock()
            let now = time.now()
            retryStore(now: now)
            ledger?.retry(now: now)
            // The pass schedule runs on the boot clock: the watchdog's `now` jumps when a step is
            // applied, and a backward jump must not postpone the next pass.
            let boot = Int64(engine.clock.boottimeNanoseconds() / 1_000_000)
            // A quota used up in the data path ends its window at the next wake (≤ 1 s).
            if reason != .interval || stepped || engine.quotas.takeWake() || boot &- lastPassBootMs >= interval - 50 {
                watchdog.tick(now: now)
                lastPassBootMs = boot
            }
            history.heartbeat(now: now)
        }
    }

    /// What a store gives a starting daemon (`openStore`).
    struct OpenedStore {
        var store: StateStore
        var writer: StoreWriter
        var ledger: WindowLedger
        var windows: [String: WindowDates]
        var used: [String: ByteUse]
        var overrides: [String: PeerTierOverride]
        var maxFlowId: Int64
        var maxGeneration: Int64
        var marker: (String, String)?
    }

    /// Opens the store for a starting daemon: closes the sessions and flows a crash left open (at
    /// the last time the store proves the daemon ran), moves the stored windows back when the wall
    /// clock is behind the heartbeat (`StartClock`), records the start, and reads windows and tier
    /// overrides. Throws when the store cannot be opened or read.
    /// `journal`: the gateway name history is journalled under for the shared store (nil: the
    /// store is local; a journal left from a shared setup is dropped, and said so).
    static func openStore(_ path: String, now: Int64, log: Logger, gateway: String, journal: String?) throws -> OpenedStore {
        let store = try StateStore(path: path)
        // First, so that the crash closes below are journalled too.
        let dropped = try store.setJournalTarget(gateway: journal, at: now)
        if dropped > 0 {
            log.warning("store: \(dropped) history change(s) journalled for a shared store were never shipped and are dropped: "
                + "Store is local now (set Store = … again to ship new history)")
        }
        let proven = try store.lastProvenAlive()
        let crashAt = min(proven ?? now, now)
        let closed = try store.closeAllOpenSessionsAsCrash(at: crashAt)
        let closedFlows = try store.closeAllOpenFlowsAsCrash(at: crashAt)
        if closed > 0 || closedFlows > 0 {
            log.warning("store: \(closed) session(s) and \(closedFlows) flow(s) left open by a crash closed at "
                + "\(TimeText.iso(crashAt)) (the last time the store proves tunneld ran; reason crash)")
        }
        // The case table of docs/session.md, "Across a restart". Only the heartbeat counts: the
        // daemon moves it with a clock step (rows stamped before a backward step keep their later
        // times and would make the clock look behind).
        let start = StartClock.at(wallMs: now, heartbeatMs: try store.daemonState()?.heartbeatAt)
        var windows: [String: WindowDates] = [:]
        var used: [String: ByteUse] = [:]
        for w in try store.windows() {
            let stored = w.dates
            let dates = stored.isOpenEnded ? stored : stored.shifted(by: start.shiftMs)
            windows[w.peer] = dates
            if w.usedUp > 0 || w.usedDown > 0 { used[w.peer] = ByteUse(up: w.usedUp, down: w.usedDown) }
            if dates != stored {
                try store.putWindow(SessionWindow(peer: w.peer, dates: dates, usedUp: w.usedUp, usedDown: w.usedDown))
            }
        }
        var marker: (String, String)?
        switch start {
        case .trusted: break
        case .behind(let ms):
            let text = "the wall clock is \(DurationFormat.format(ms: (ms + 500) / 1000 * 1000)) behind the daemon's last heartbeat; "
                + "\(windows.count) window(s) moved back with it, so no window or pause gains from the restart"
            log.warning("watchdog: \(text)")
            marker = ("watchdog: \(text)", "step_ms=\(-ms)")
        case .farAhead(let ms):
            let text = "the wall clock is \(DurationFormat.format(ms: (ms + 500) / 1000 * 1000)) ahead of the daemon's last heartbeat; "
                + "if the clock is wrong, pauses end early — check NTP (windows kept as stored)"
            log.error("watchdog: \(text)")
            marker = ("watchdog: \(text)", "ahead_ms=\(ms)")
        }
        try store.daemonStarted(pid: Int64(getpid()), at: now)
        var overrides: [String: PeerTierOverride] = [:]
        for o in try store.tierOverrides() { overrides[o.peer] = PeerTierOverride(tier: o.tier, origin: .admin, since: o.changedAt) }
        let maxFlowId = try store.maxFlowId()
        let maxGeneration = try store.maxDecisionGeneration()
        let writer = try StoreWriter(path: path, log: log)
        return OpenedStore(store: store, writer: writer, ledger: WindowLedger(path: path, gateway: gateway, log: log), windows: windows,
                           used: used, overrides: overrides, maxFlowId: maxFlowId,
                           maxGeneration: maxGeneration, marker: marker)
    }

    /// A store that could not be opened at start (read-only directory, full disk, wrong owner) is
    /// tried again with backoff (1 s doubling to 60 s). Once it opens: the crash recovery and start
    /// steps run, stored windows join the watchdog's (a stored pause is kept; what the watchdog
    /// holds in memory since the start is written), stored tier overrides apply where tunneld has
    /// not been told otherwise, and a marker says how long history was lost.
    func retryStore(now: Int64) {
        guard let retry = storeRetry, now >= retry.at else { return }
        let opened: OpenedStore
        do {
            opened = try SessionService.openStore(storePath, now: now, log: log, gateway: gatewayName, journal: journalGateway)
        } catch {
            let delay = min(retry.delayMs * 2, 60_000)
            storeRetry = (at: now + delay, delayMs: delay, since: retry.since)
            return
        }
        storeRetry = nil
        heartbeatStore = opened.store
        history.attach(writer: opened.writer, ledger: opened.ledger)
        watchdog.adoptStored(windows: opened.windows, now: now)
        tierChanges.withLock { _ in
            // Stored overrides apply where tunneld was not told otherwise since it started.
            let current = engine.registry.tierOverrides
            for (peer, o) in opened.overrides.sorted(by: { $0.key < $1.key }) where current[peer] == nil {
                engine.registry.setOverride(peer, o)
            }
            for (peer, o) in current { opened.ledger.setTier(peer: peer, o.tier, at: o.since) }
        }
        watchdog.tiersChanged(now: now)
        let lost = history.droppedRecords
        let text = "store: \(storePath) is usable again after \(DurationFormat.format(ms: (now - retry.since + 500) / 1000 * 1000)) "
            + "without it; \(lost) record(s) could not be kept meanwhile"
        log.notice(text)
        history.record(.marker(at: now, label: text, detail: "dropped=\(lost)"))
        if let (label, detail) = opened.marker { history.record(.marker(at: now, label: label, detail: detail)) }
    }

    /// Applies a wall-clock step, if the clock stepped since the last tick (docs/session.md,
    /// "Clock steps"): the stored dates move with it and the heartbeat follows the new clock.
    @discardableResult
    func syncClock() -> Bool {
        guard let step = time.sync() else { return false }
        let now = time.now()
        let sign = step < 0 ? "-" : "+"
        log.notice("watchdog: the wall clock stepped \(sign)\(DurationFormat.format(ms: (abs(step) + 500) / 1000 * 1000)); "
            + "windows and pauses keep their real time left")
        watchdog.clockStepped(by: step, now: now)
        do { try heartbeatStore?.moveHeartbeat(to: now) } catch { log.warning("store: moving the heartbeat after a clock step: \(error)") }
        return true
    }

    /// Daemon shutdown (after the engine stopped): sessions end `shutdown`, the writer drains.
    public func stop() {
        ticker?.stop()
        ticker = nil
        let now = time.now()
        watchdog.shutdown(now: now)
        shared?.stop()
        ledger?.retry(now: now)
        history.heartbeat(now: now)
        history.writer?.close()
        heartbeatStore = nil
    }

    /// The configured peers changed (start, reload): their `Disabled` and `Expires` go to the
    /// watchdog, and the tier overrides are applied again over the (maybe new) configured tiers.
    public func configPeersChanged(_ peers: [PeerConfig]) {
        var fromConfig: [String: Watchdog.Restriction] = [:]
        for p in peers {
            if p.disabled { fromConfig[p.name] = .disabled } else if let at = p.expiresMs { fromConfig[p.name] = .expires(at: at) }
        }
        let configured = Set(peers.map(\.name))
        let now = time.now()
        let effective = admission.withLock { a -> [String: Watchdog.Restriction] in
            // A change of this gateway's config (a reload, not the first config) is shared: every
            // gateway applies it. It applies here at once, before the store has it.
            if let sync = shared, let before = a.config {
                for name in Set(before.keys).union(fromConfig.keys).sorted() where configured.contains(name) && before[name] != fromConfig[name] {
                    var expires: Int64? = nil
                    if case .expires(let at)? = fromConfig[name] { expires = at }
                    let change = SharedAdmission(peer: name, disabled: fromConfig[name] == .disabled, expiresAt: expires, changedAt: now,
                                                 gateway: gatewayName)
                    a.shared[name] = change
                    sync.localAdmission(change)
                }
            }
            a.config = fromConfig
            return Self.merge(config: fromConfig, shared: a.shared, configured: configured)
        }
        applyRestrictions(effective)
    }

    /// The restrictions in force: each peer's shared admission when the shared store has one
    /// (the latest change of any gateway), else its config's.
    static func merge(config: [String: Watchdog.Restriction], shared: [String: SharedAdmission],
                      configured: Set<String>) -> [String: Watchdog.Restriction] {
        var out = config
        for (name, a) in shared where configured.contains(name) {
            if a.disabled { out[name] = .disabled } else if let at = a.expiresAt { out[name] = .expires(at: at) } else { out[name] = nil }
        }
        return out
    }

    /// `Disabled` / `Expires` changes other gateways made (pulled from the shared store).
    func applySharedAdmissions(_ changes: [SharedAdmission]) {
        let configured = Set(engine.registry.current.all.map(\.name))
        let (changed, effective) = admission.withLock { a -> ([SharedAdmission], [String: Watchdog.Restriction]?) in
            let changed = changes.filter { a.shared[$0.peer] != $0 }
            for c in changed { a.shared[c.peer] = c }
            guard !changed.isEmpty, let config = a.config else { return (changed, nil) }
            return (changed, Self.merge(config: config, shared: a.shared, configured: configured))
        }
        if let effective {
            for c in changed where c.gateway != gatewayName {
                log.info("shared store: \(c.peer) \(c.disabled ? "disabled" : c.expiresAt.map { "expires \(TimeText.iso($0))" } ?? "enabled") on \(c.gateway)")
            }
            applyRestrictions(effective)
        }
    }

    /// Puts `restrictions` in force (peer-disable events for new ones).
    private func applyRestrictions(_ restrictions: [String: Watchdog.Restriction]) {
        let before = self.restrictions.withLock { r in
            defer { r = restrictions }
            return r
        }
        if peerEvents.load(ordering: .relaxed) {
            for (name, r) in restrictions.sorted(by: { $0.key < $1.key }) where before[name] == nil {
                switch r {
                case .disabled: log.event(.peerDisable(peer: name, reason: "disabled"))
                case .expires(let at) where at <= time.now(): log.event(.peerDisable(peer: name, reason: "expired"))
                case .expires: break
                }
            }
        }
        watchdog.setRestrictions(restrictions, now: time.now())
    }

    /// `tunnelctl peer tier NAME TIER` with the daemon running (control request `peerTier`): the
    /// override goes to the registry (which applies it to policy, limits and the watchdog's
    /// decisions at once), to the store on the watchdog's connection and to the shared store, in
    /// one step. Returns the tier before.
    public func setTier(peer name: String, _ tier: PeerTier) -> Result<PeerTier, TierChangeError> {
        guard let peer = engine.peer(named: name) else { return .failure(.unknownPeer(name)) }
        guard engine.registry.tierClasses.isConfigured(tier) else { return .failure(.unknownTier(tier)) }
        let now = time.now()
        tierChanges.withLock { _ in
            shared?.localTier(peer: name, tier: tier, at: now)
            if let ledger, let error = ledger.setTier(peer: name, tier, at: now) {
                log.warning("store: tier of \(name) is \(tier.rawValue) now, but the store did not take it yet (\(error)); retrying")
            }
            engine.registry.setOverride(name, PeerTierOverride(tier: tier, origin: .admin, since: now))
        }
        watchdog.tiersChanged(now: now)
        return .success(peer.tier)
    }

    /// Tier overrides another gateway set or cleared (pulled from the shared store): applied like
    /// a local change and kept in the local store; a tier this gateway does not configure is
    /// skipped with a warning (its config has no `[Tier NAME]` for it).
    func applySharedTiers(_ changes: [SharedTierChange]) {
        let now = time.now()
        let changed = tierChanges.withLock { _ -> Bool in
            var changed = false
            for c in changes where engine.registry.tierOverrides[c.peer]?.tier != c.tier {
                if let t = c.tier, !engine.registry.tierClasses.isConfigured(t) {
                    log.warning("shared store: tier of \(c.peer) is \(t.rawValue) on another gateway, which this one does not configure; kept as it was")
                    continue
                }
                ledger?.setTier(peer: c.peer, c.tier, at: now)
                engine.registry.setOverride(c.peer, c.tier.map { PeerTierOverride(tier: $0, origin: .shared, since: c.changedAt) })
                changed = true
            }
            return changed
        }
        if changed { watchdog.tiersChanged(now: now) }
    }

    /// The shared store's health for `status` (nil with `Store = local`).
    public func sharedHealth() -> SharedStoreHealth? { shared?.health() }

    /// `tunnelctl kick`: the session ends `admin-kick`.
    public func kicked(_ name: String) {
        guard let p = engine.peer(named: name) else { return }
        watchdog.kicked(p.handle, now: time.now())
    }

    /// The peers reply with the watchdog's dates and state (the tier is the registry's, as the
    /// engine's reply already carries it).
    public func annotate(_ peers: [ControlProtocol.PeerStatus]) -> [ControlProtocol.PeerStatus] {
        let now = time.now()
        return peers.map { s in
            var s = s
            guard let v = watchdog.view(s.name, now: now) else { return s }
            s.tier = v.tier
            s.allowedUntilMs = v.window?.allowedUntil
            s.reconnectAtMs = v.window?.reconnectAt
            s.limits = v.limits
            s.quotaUsed = v.limits.hasQuota ? (v.used ?? .zero) : nil
            // Disabled or expired is what refuses it, whatever its window says.
            if let r = v.restriction {
                s.session = r == .disabled ? .disabled : .expired
            } else if case .paused = WatchdogRules.phase(now: now, limits: v.limits, window: v.window) {
                s.session = .paused
            }
            return s
        }
    }

    /// The store's health for `status`: the writer's (drops per family, an outage in progress), or,
    /// without a store, unavailable since the daemon started, with every record counted as lost.
    /// The watchdog's own writes count too: refusals its backlog had no room for are drops, and
    /// writes waiting for a retry are retained.
    public func storeHealth() -> StoreHealth {
        guard let writer = history.writer else {
            return StoreHealth(unavailableSinceMs: engine.startedAtMs, error: "the store could not be opened at start (see the log)")
        }
        var health = writer.health()
        if let ledger {
            health.drops.refusals &+= ledger.droppedRefusals.load(ordering: .relaxed)
            health.retained += ledger.backlog
            if health.unavailableSinceMs == nil, let outage = ledger.outage {
                health.unavailableSinceMs = outage.sinceMs
                health.error = outage.error
            }
        }
        return health
    }

    /// Why a tier change was not made.
    public enum TierChangeError: Error, Sendable {
        case unknownPeer(String)
        case unknownTier(PeerTier)
    }
}

