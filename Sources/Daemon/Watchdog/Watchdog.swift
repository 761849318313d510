import Engine
import Core
import Runtime
import Sessions
import Config
import Store
import Synchronization
import WireGuard

/// The free-session watchdog (docs/session.md): per-peer windows, live sessions and refusals, with
/// the decisions taken by `WatchdogRules` and applied to a `WatchdogDevice`. Every entry point
/// takes the wall-clock time as an argument, so tests drive it with any clock; the daemon calls
/// `tick` from `WatchdogTicker` and the handshake hooks from the data path.
///
/// Thread-safe: one mutex over the state, held for map updates and the device's own short
/// locks (never across I/O; records go to the sink's bounded queue).
public final class Watchdog: Sendable {
    /// A peer's live session.
    public struct LiveSession: Sendable, Hashable {
        /// When the session started (epoch ms).
        public var startedAt: Int64
        /// The latest completed handshake (epoch ms), for `idle`.
        public var lastHandshake: Int64
        /// The last pass that saw the session carry data (its start before that), for `IdleTimeout`.
        public var lastTraffic: Int64
        var rx0: UInt64
        var tx0: UInt64
        /// Bytes forwarded (the quota meter's count) at the last pass, to see traffic.
        var seenBytes: UInt64 = 0
    }

    /// What `tunnelctl peers` / `session` need from the daemon about one peer.
    public struct PeerView: Sendable, Hashable {
        /// Tier in force (the registry's: override or configuration).
        public var tier: PeerTier
        /// The stored window, if any.
        public var window: WindowDates?
        /// The live session, if connected.
        public var session: LiveSession?
        /// True while the device refuses the peer.
        public var refused: Bool
        /// Handshakes refused since the daemon started (pause, disabled, expired).
        public var refusals: UInt64 = 0
        /// The limits in force.
        public var limits: PeerLimits = .unlimited
        /// Bytes used in the current window (nil: not counted — no quota).
        public var used: ByteUse? = nil
        /// Why the peer is refused whatever its window (`disabled`, `expired`); nil: it is not
        /// (or the view was asked without a time).
        public var restriction: SessionEndReason? = nil
    }

    /// A configured peer, as the engine's registry holds it.
    public typealias Peer = GatewayPeer

    /// Why a configured peer is refused whatever its tier: `Disabled = true`, or an
    /// `Expires` date.
    public enum Restriction: Sendable, Hashable {
        case disabled
        case expires(at: Int64)
    }

    struct State {
        var restrictions: [String: Restriction] = [:]
        var windows: [String: WindowDates] = [:]
        var sessions: [String: LiveSession] = [:]
        var refused: Set<String> = []
        var refusals: [String: UInt64] = [:]
        /// Bytes used per window (as last read from the meter or the store).
        var used: [String: ByteUse] = [:]
        /// What the decisions taken under the lock want done to peers in the device: returned
        /// with an admission, applied by the other entry points before they unlock.
        var actions: [PeerAction] = []
        /// Window opens done off the handshake thread, per peer.
        var asks: [String: WindowAsk] = [:]
        /// Records taken on the handshake path, written by the opener thread (store statements).
        var deferred: [(record: WatchdogRecord, tier: PeerTier?)] = []
    }

    /// A window open done on the opener thread (asked of the `WindowAuthority` first, if any).
    enum WindowAsk: Equatable {
        /// Started at `since` (watchdog time); the peer's initiations wait (`.later`).
        case inFlight(since: Int64)
        /// Done at `at`: the window is in memory (and on disk) — ours, or another gateway's
        /// adopted; with a shared store that did not answer, ours, reconciled later.
        case answered(at: Int64)
    }

    /// How long a done open answers for: the retry right after it decides on the window it left
    /// in memory, and if that still calls for a new window (a store answering with a stale one),
    /// the window opens at completion instead of asking forever. Later connects open afresh.
    static let openStandsMs: Int64 = 1_000
    /// An open still running after this long is started again (its thread is stuck).
    static let openTimeoutMs: Int64 = 30_000

    /// Settings in force.
    public let config: WatchdogConfig
    /// The peers (the engine's registry: names, handles, the tier in force and its limits).
    public let peers: PeerRegistry
    let device: any WatchdogDevice
    let sink: any WatchdogSink
    let state: Mutex<State>
    /// The data path's byte accounting (quotas, `IdleTimeout`); the watchdog arms and reads it.
    public let quotas: QuotaMeter
    /// The shared windows of several gateways (`Store = postgresql://…`), asked before a
    /// window opens; nil: this gateway decides alone (`Store = local`).
    private let authority = Mutex<(any WindowAuthority)?>(nil)

    /// Runs the authority's window opens off the handshake thread.
    let opener = WindowOpener()

    /// Makes `a` the authority asked before a window opens (set once, before the engine starts).
    public func setAuthority(_ a: any WindowAuthority) { authority.withLock { $0 = a } }

    /// A watchdog with the windows stored before (restart safety, §6.6) and their byte use.
    public init(config: WatchdogConfig, peers: PeerRegistry, device: any WatchdogDevice, sink: any WatchdogSink, windows: [String: WindowDates] = [:],
                used: [String: ByteUse] = [:], quotas: QuotaMeter = QuotaMeter())
    {
        self.config = config
        self.peers = peers
        self.device = device
        self.sink = sink
        self.quotas = quotas
        var s = State()
        s.windows = windows
        s.used = used
        state = Mutex(s)
    }

    /// What ended the window `p` is paused after (its quota, or its Session time).
    private func pauseReason(_ s: State, _ p: Peer) -> WatchdogRules.PauseReason {
        WatchdogRules.pauseReason(used: s.used[p.name] ?? .zero, limits: p.limits)
    }

    /// Why `p` is refused at `now` regardless of windows (nil: it is not).
    private static func restricted(_ s: State, _ p: Peer, now: Int64) -> SessionEndReason? {
        switch s.restrictions[p.name] {
        case .disabled?: return .disabled
        case .expires(let at)? where now >= at: return .expired
        default: return nil
        }
    }

    /// The disabled and expiring peers (from the config, at start and at every reload). A live
    /// session of a peer that becomes disabled or expired ends at once (reason `disabled` /
    /// `expired`); its handshakes are refused and recorded until it is enabled (or its date moves).
    public func setRestrictions(_ restrictions: [String: Restriction], now: Int64) {
        state.withLock { $0.restrictions = restrictions }
        tick(now: now)
    }

    /// The registry changed from `old` to `new` at `now` (the daemon calls this from the registry's
    /// change listener): a peer that disappeared with a live session ends it `removed`.
    public func peersChanged(from old: PeerDirectory, to new: PeerDirectory, now: Int64) {
        state.withLock { s in
            for p in old.all where new[p.handle] == nil && new.named(p.name) == nil {
                closeSessionLocked(&s, p, at: now, reason: .removed)
                s.refused.remove(p.name)
            }
            applyLocked(&s)
        }
    }

    /// An initiation from `peer` arrived at `now`, authenticated, before any response is built:
    /// the decision and the peer actions with it, as values (nothing is called on the device).
    /// `.refuse` when the peer must be refused (its pause, or its window ended while it was
    /// connected; the actions refuse it and drop its keys); the caller sends nothing back and
    /// reports the refusal (``handshakeRefused(_:now:)`` records it). Admitting changes nothing:
    /// ``completeHandshake(_:now:)`` opens the window and the session once the handshake is done.
    ///
    /// A connect that would open a window has it opened first on the opener thread — asked of the
    /// shared store when there is one, and written to disk — never here (this runs on the
    /// handshake thread); until then the decision is `.later` (the initiation waits unanswered).
    /// Records of refusals made here are written by the opener thread too.
    public func decideInitiation(_ handle: PeerHandle, now: Int64) -> Admission {
        let dir = peers.current
        let authority = self.authority.withLock { $0 }
        return state.withLock { s in
            guard let p = dir[handle] else { return .admit }
            let restriction = Watchdog.restricted(s, p, now: now)
            let decision = WatchdogRules.onInitiation(
                now: now, restriction: restriction, limits: p.limits, window: s.windows[p.name],
                used: s.used[p.name] ?? .zero, live: s.sessions[p.name] != nil,
                openFirst: !askAnsweredLocked(&s, p, now: now))
            switch decision {
            case .refuse(let code, let end):
                if let end { closeSessionLocked(&s, p, at: now, reason: end) }
                refuseLocked(&s, p, at: now)
                if let restriction { s.deferred.append((.restricted(peer: p.name, reason: restriction.rawValue, at: now), p.tier)) }
                return takeLocked(&s, .refuse(code))
            case .openFirst(let w):
                askLocked(&s, authority, p, w, now: now)
                return takeLocked(&s, .later)
            case .admit:
                // Checked at arrival: a pause that ended since the last tick ends now, so the first
                // initiation after `reconnect_at` is answered (not the one after the next tick).
                if s.refused.remove(p.name) != nil { s.actions.append(.unrefuse(p.handle)) }
                return takeLocked(&s, .admit)
            }
        }
    }

    /// ``decideInitiation(_:now:)`` with its actions applied to the device, for callers off the
    /// handshake thread (tests, tools): a window that opens first is waited for, and the records
    /// are written before it returns. True when admitted.
    public func admitInitiation(_ handle: PeerHandle, now: Int64) -> Bool {
        var a = decideInitiation(handle, now: now)
        if a.decision == .later {
            applyToDevice(a.actions)
            waitForWindowOpens()
            a = decideInitiation(handle, now: now)
        }
        applyToDevice(a.actions)
        waitForWindowOpens()
        return a.decision == .admit
    }

    /// ``completeHandshake(_:now:)`` with its actions applied to the device: false when the
    /// peer must be refused (the caller sends nothing back; its keys are dropped, it is refused).
    public func handshakeCompleted(_ handle: PeerHandle, now: Int64) -> Bool {
        let a = completeHandshake(handle, now: now)
        applyToDevice(a.actions)
        waitForWindowOpens()  // its records are written when this returns
        return a.decision == .admit
    }

    /// A handshake with `peer` completed at `now`: `.refuse` when the peer must be refused after
    /// all (the actions drop its keys and refuse it; the caller sends nothing back).
    public func completeHandshake(_ handle: PeerHandle, now: Int64) -> Admission {
        let dir = peers.current
        return state.withLock { s in
            guard let p = dir[handle] else { return .admit }
            if let why = Watchdog.restricted(s, p, now: now) {  // our own initiation's answer, too
                closeSessionLocked(&s, p, at: now, reason: why)
                refuseLocked(&s, p, at: now)
                return takeLocked(&s, .refuse(why == .disabled ? .disabled : .expired))
            }
            if var live = s.sessions[p.name] {
                // Rekey of a live session (or an unconnected peer's retry): not a new connect.
                if case .paused = WatchdogRules.phase(now: now, limits: p.limits, window: s.windows[p.name]) {
                    // The window ended between ticks: end it now.
                    closeSessionLocked(&s, p, at: now, reason: .freeLimit)
                    refuseLocked(&s, p, at: now)
                    return takeLocked(&s, .refuse(refusalCodeLocked(s, p, now: now)))
                }
                live.lastHandshake = now
                s.sessions[p.name] = live
                return takeLocked(&s, .admit)
            }
            switch WatchdogRules.onConnect(now: now, limits: p.limits, window: s.windows[p.name]) {
            case .admitUnlimited, .resume:
                break
            case .openWindow(let w):
                s.windows[p.name] = w
                s.used[p.name] = nil
                s.asks[p.name] = nil
                // Our own initiation's answer (an initiation's window opened before it was
                // answered): written by the opener thread, like every store statement here.
                s.deferred.append((.windowPut(peer: p.name, w, opened: true), nil))
            case .refuse(let w):
                refuseLocked(&s, p, at: now)
                s.deferred.append((.refused(peer: p.name, windowEnd: w.allowedUntil, at: now, reason: pauseReason(s, p)), p.tier))
                return takeLocked(&s, .refuse(refusalCodeLocked(s, p, now: now)))
            }
            let bytes = device.byteCounts(p.handle)
            let meter = armLocked(&s, p)
            s.sessions[p.name] = LiveSession(startedAt: now, lastHandshake: now, lastTraffic: now, rx0: bytes.rx, tx0: bytes.tx,
                                             seenBytes: meter?.used.total ?? 0)
            if s.refused.remove(p.name) != nil { s.actions.append(.unrefuse(p.handle)) }
            if s.deferred.isEmpty {
                sink.record(.sessionOpened(peer: p.name, at: now), tier: p.tier)  // queued: no statement here
            } else {
                s.deferred.append((.sessionOpened(peer: p.name, at: now), p.tier))  // after its window's row
            }
            return takeLocked(&s, .admit)
        }
    }

    /// The device refused an initiation from `peer` (it is in its pause): one attempt, coalesced
    /// into the window's refusal row by the store.
    public func handshakeRefused(_ handle: PeerHandle, now: Int64) {
        let dir = peers.current
        state.withLock { s in
            guard let p = dir[handle] else { return }
            s.refusals[p.name, default: 0] &+= 1
            switch WatchdogRules.phase(now: now, limits: p.limits, window: s.windows[p.name]) {
            case .paused(let w):
                sink.record(.refused(peer: p.name, windowEnd: w.allowedUntil, at: now, reason: pauseReason(s, p)), tier: p.tier)
            default:
                // Refused for another reason, or the pause just ended: the next tick un-refuses.
                break
            }
        }
    }

    /// ``handshakeRefused(_:now:)`` on the opener thread (its record is a store statement): what the
    /// handshake thread calls.
    public func handshakeRefusedLater(_ handle: PeerHandle, now: Int64) {
        opener.submit { [weak self] in self?.handshakeRefused(handle, now: now) }
    }

    /// Why `handle`'s handshakes are refused at `now` (the live ring's refusal events): disabled or
    /// expired first, else the pause it is in and what ended its window; `.unknown` when neither.
    public func refusalCode(_ handle: PeerHandle, now: Int64) -> RefusalCode {
        let dir = peers.current
        return state.withLock { s in
            guard let p = dir[handle] else { return .unknown }
            return refusalCodeLocked(s, p, now: now)
        }
    }

    private func refusalCodeLocked(_ s: State, _ p: Peer, now: Int64) -> RefusalCode {
        switch Watchdog.restricted(s, p, now: now) {
        case .disabled?: return .disabled
        case .expired?: return .expired
        default: break
        }
        if case .paused = WatchdogRules.phase(now: now, limits: p.limits, window: s.windows[p.name]) {
            return pauseReason(s, p).refusalCode
        }
        return .unknown
    }

    /// True when a window open for `p` was just done (so the decision goes on from memory);
    /// false when none was made, it is running, or it is old (a new one is started).
    private func askAnsweredLocked(_ s: inout State, _ p: Peer, now: Int64) -> Bool {
        switch s.asks[p.name] {
        case .answered(let at)? where now - at < Watchdog.openStandsMs: return true  // `at` may be ahead: see askLocked
        case .inFlight(let since)? where now >= since && now - since < Watchdog.openTimeoutMs: return false
        default:
            s.asks[p.name] = nil
            return false
        }
    }

    /// A connect that would open window `w` has it opened on the opener thread (never on the
    /// handshake thread): with a shared store the authority is asked first (one atomic statement
    /// on the shared database, bounded in time) and the window it answers with is adopted — ours
    /// if we opened it, another gateway's if the peer's window or pause is running there. Without
    /// one, or without an answer (the database is away or slow), the window opens here (with a
    /// shared store: reconciled when it is back). Either way it is written to disk there, so it
    /// is stored before the handshake it opened is answered; the peer's next initiation is then
    /// admitted, resumed or refused by the usual rules.
    private func askLocked(_ s: inout State, _ a: (any WindowAuthority)?, _ p: Peer, _ w: WindowDates, now: Int64) {
        guard s.asks[p.name] == nil else { return }
        s.asks[p.name] = .inFlight(since: now)
        let name = p.name
        opener.submit { [weak self] in
            let started = SystemClock().monotonicNanoseconds()
            let grant = a?.open(peer: name, dates: w, now: now)
            // Done at `now` plus the time the open took (the watchdog's `now` is an argument).
            let tookMs = Int64((SystemClock().monotonicNanoseconds() &- started) / 1_000_000)
            guard let self else { return }
            let dir = self.peers.current
            self.state.withLock { s in
                s.asks[name] = .answered(at: now + tookMs)
                guard let p = dir.named(name) else { return }
                if let grant {
                    self.adoptLocked(&s, p, grant)
                } else if case .openWindow(let opened) = WatchdogRules.onConnect(now: now, limits: p.limits, window: s.windows[name]) {
                    s.windows[name] = opened
                    s.used[name] = nil
                    self.sink.record(.windowPut(peer: name, opened, opened: true))
                }
            }
        }
    }

    /// Waits until every window open asked so far was answered (tests; shutdown).
    public func waitForWindowOpens() { opener.wait() }

    /// Windows other gateways changed (polled from the shared store): each is adopted where it
    /// differs from ours, and a pass applies them at once (a window another gateway ended on its
    /// quota ends here too; a pause started elsewhere refuses here).
    public func adoptShared(_ grants: [String: SharedGrant], now: Int64) {
        guard !grants.isEmpty else { return }
        let dir = peers.current
        state.withLock { s in
            for (name, g) in grants.sorted(by: { $0.key < $1.key }) {
                guard let p = dir.named(name) else { continue }
                adoptLocked(&s, p, g)
            }
        }
        tick(now: now)
    }

    private func adoptLocked(_ s: inout State, _ p: Peer, _ g: SharedGrant) {
        guard s.windows[p.name] != g.dates || s.used[p.name] ?? .zero != g.used else { return }
        let moved = s.windows[p.name] != g.dates
        s.windows[p.name] = g.dates
        s.used[p.name] = g.used
        if moved { sink.record(.windowPut(peer: p.name, g.dates, used: g.used, opened: g.opened)) }
    }

    /// The admin ended `peer`'s session (`tunnelctl kick`).
    public func kicked(_ handle: PeerHandle, now: Int64) {
        let dir = peers.current
        state.withLock { s in
            guard let p = dir[handle] else { return }
            closeSessionLocked(&s, p, at: now, reason: .adminKick)
            applyLocked(&s)
        }
    }

    /// The tier in force changed in the registry (`tunnelctl peer tier`, the shared store, a
    /// reload): a pass applies it at once. The window is kept whatever the tier: premium ignores
    /// it (a paused peer gets in at once), and a move back to free finds the pause it was in, so a
    /// quick premium-and-back never hands out a fresh window (docs/session.md, "Tier changes").
    public func tiersChanged(now: Int64) { tick(now: now) }

    /// Windows read from a store that opened late (it could not be opened at start): a stored
    /// window is taken where the watchdog has none (so a stored pause is kept); the watchdog's own
    /// windows win and are written. Then a pass applies them.
    public func adoptStored(windows stored: [String: WindowDates], now: Int64) {
        state.withLock { s in
            for (peer, w) in stored where s.windows[peer] == nil { s.windows[peer] = w }
            for (peer, w) in s.windows.sorted(by: { $0.key < $1.key }) where stored[peer] != w {
                sink.record(.windowPut(peer: peer, w, used: s.used[peer] ?? .zero))
            }
        }
        tick(now: now)
    }

    /// The wall clock stepped by `stepMs` (positive: forward), seen by `WatchdogTime.sync` at
    /// `now` (already on the new wall clock). Every stored date moves by the step, so each window
    /// and pause keeps the real time it had left; the moved windows are stored again and a marker
    /// says what happened (docs/session.md, "Clock steps").
    public func clockStepped(by stepMs: Int64, now: Int64) {
        state.withLock { s in
            for (peer, w) in s.windows.sorted(by: { $0.key < $1.key }) {
                let moved = w.isOpenEnded ? WindowDates(allowedUntil: w.allowedUntil, reconnectAt: w.reconnectAt) : w.shifted(by: stepMs)
                s.windows[peer] = moved
                sink.record(.windowPut(peer: peer, moved, used: s.used[peer] ?? .zero))
            }
            for (peer, live) in s.sessions {
                var l = live
                l.startedAt &+= stepMs
                l.lastHandshake &+= stepMs
                l.lastTraffic &+= stepMs
                s.sessions[peer] = l
            }
            let sign = stepMs < 0 ? "-" : "+"
            let shown = (abs(stepMs) + 500) / 1000 * 1000  // to the second; the exact step is in the detail
            sink.record(.marker(
                at: now, label: "watchdog: wall clock stepped \(sign)\(DurationFormat.format(ms: shown)); "
                    + "\(s.windows.count) window(s) moved with it",
                detail: "step_ms=\(stepMs)"))
        }
    }

    /// One watchdog pass at `now`: refuse peers in their pause, let the others in, end sessions
    /// whose window ended (`free-limit`) or that went idle.
    public func tick(now: Int64) {
        let dir = peers.current
        state.withLock { s in
            for p in dir.all {
                if let why = Watchdog.restricted(s, p, now: now) {
                    closeSessionLocked(&s, p, at: now, reason: why)
                    refuseLocked(&s, p, at: now)
                    continue
                }
                quotaPassLocked(&s, p, now: now)
                let d = WatchdogRules.onTick(
                    now: now, limits: p.limits, window: s.windows[p.name],
                    sessionLastHandshake: s.sessions[p.name]?.lastHandshake, lastTraffic: s.sessions[p.name]?.lastTraffic,
                    config: config)
                if let w = d.openWindow {
                    s.windows[p.name] = w
                    s.used[p.name] = nil
                    sink.record(.windowPut(peer: p.name, w, opened: true))
                    armLocked(&s, p)
                }
                if let reason = d.endSession { closeSessionLocked(&s, p, at: now, reason: reason) }
                if d.refuse {
                    refuseLocked(&s, p, at: now)
                } else if s.refused.remove(p.name) != nil {
                    s.actions.append(.unrefuse(p.handle))
                }
            }
            applyLocked(&s)
        }
    }

    /// Daemon shutdown: every window's byte use is stored, every live session ends `shutdown`.
    public func shutdown(now: Int64) {
        opener.wait()  // window opens and refusal rows still being written go first
        let dir = peers.current
        state.withLock { s in
            for p in dir.all {
                if let a = quotas.account(p.handle), let w = s.windows[p.name], a.window == w.allowedUntil, a.used != s.used[p.name] {
                    s.used[p.name] = a.used
                    sink.record(.windowPut(peer: p.name, w, used: a.used))
                }
                closeSessionLocked(&s, p, at: now, reason: .shutdown)
            }
            applyLocked(&s)
        }
    }

    /// The watchdog's view of the peer called `name`.
    public func view(_ name: String, now: Int64? = nil) -> PeerView? {
        let dir = peers.current
        return state.withLock { s in
            guard let p = dir.named(name) else { return nil }
            let live = quotas.account(p.handle).flatMap { a in a.window == s.windows[name]?.allowedUntil ? a.used : nil }
            return PeerView(tier: p.tier, window: s.windows[name], session: s.sessions[name],
                            refused: s.refused.contains(name), refusals: s.refusals[name] ?? 0, limits: p.limits,
                            used: p.limits.hasQuota ? (live ?? s.used[name] ?? .zero) : nil,
                            restriction: now.flatMap { Watchdog.restricted(s, p, now: $0) })
        }
    }

    /// The tier in force for `name` (the registry's: override or configuration).
    public func tier(of name: String) -> PeerTier? { view(name)?.tier }

    // MARK: - under the lock

    /// The decision with the actions taken under the lock so far (handed to the caller).
    private func takeLocked(_ s: inout State, _ decision: AdmissionDecision) -> Admission {
        defer { s.actions.removeAll() }
        writeDeferredLocked(&s)
        return Admission(decision, actions: s.actions)
    }

    /// Hands the records taken on the handshake path to the opener thread, in order.
    private func writeDeferredLocked(_ s: inout State) {
        guard !s.deferred.isEmpty else { return }
        let records = s.deferred
        s.deferred.removeAll()
        let sink = self.sink
        opener.submit {
            for r in records {
                if let tier = r.tier { sink.record(r.record, tier: tier) } else { sink.record(r.record) }
            }
        }
    }

    /// Applies the actions taken under the lock to the device (the entry points off the
    /// handshake path: ticks, kicks, reloads, shutdown).
    private func applyLocked(_ s: inout State) {
        applyToDevice(s.actions)
        s.actions.removeAll()
    }

    /// Applies admission's peer actions to the watchdog's device (callers that hold no engine:
    /// tests, tools; the engine applies them itself).
    public func applyToDevice(_ actions: [PeerAction]) {
        for a in actions {
            switch a {
            case .refuse(let p): device.setRefused(p, true)
            case .unrefuse(let p): device.setRefused(p, false)
            case .endSession(let p): device.endSession(p)
            }
        }
    }

    /// Arms the meter for `p` when its window (or its `IdleTimeout`) needs counting, else
    /// disarms it. Returns the account.
    @discardableResult
    private func armLocked(_ s: inout State, _ p: Peer) -> QuotaMeter.Account? {
        let l = p.limits
        // Callers arm only a window in force (just opened, resumed, or in window at a pass).
        if l.hasQuota, let w = s.windows[p.name] {
            return quotas.arm(p.handle, window: w.allowedUntil, used: s.used[p.name] ?? .zero, limits: l)
        }
        if l.idleTimeoutMs != nil {
            return quotas.arm(p.handle, window: 0, used: .zero, limits: PeerLimits.unlimited)
        }
        quotas.disarm(p.handle)
        return nil
    }

    /// The byte side of a pass for `p`: traffic seen (for `IdleTimeout`), the window's use read
    /// from the meter and stored when it moved, and a window whose quota is used up ended now
    /// (reason `quota`; its pause starts now).
    private func quotaPassLocked(_ s: inout State, _ p: Peer, now: Int64) {
        let l = p.limits
        guard l.hasQuota || l.idleTimeoutMs != nil else {
            if quotas.account(p.handle) != nil { quotas.disarm(p.handle) }
            return
        }
        let inWindow: Bool
        if let w = s.windows[p.name], case .inWindow = WatchdogRules.phase(now: now, limits: l, window: w) { inWindow = true } else { inWindow = false }
        guard let a = inWindow || !l.hasQuota ? armLocked(&s, p) : nil else {
            if quotas.account(p.handle) != nil { quotas.disarm(p.handle) }
            return
        }
        let used = a.used
        if var live = s.sessions[p.name], used.total != live.seenBytes {
            live.seenBytes = used.total
            live.lastTraffic = now
            s.sessions[p.name] = live
        }
        guard l.hasQuota, let w = s.windows[p.name] else { return }
        if used != s.used[p.name] {
            s.used[p.name] = used
            if !WatchdogRules.quotaReached(up: used.up, down: used.down, limits: l) {
                sink.record(.windowPut(peer: p.name, w, used: used))
            }
        }
        guard WatchdogRules.quotaReached(up: used.up, down: used.down, limits: l) || a.isExhausted else { return }
        let ended = WatchdogRules.endedEarly(w, now: now, limits: l)
        s.windows[p.name] = ended
        sink.record(.windowPut(peer: p.name, ended, used: used))
        quotas.disarm(p.handle)
        closeSessionLocked(&s, p, at: now, reason: .quota)
        sink.record(.marker(
            at: now, label: "watchdog: \(p.name) used its quota (\(SizeFormat.format(bytes: Int64(clamping: used.total))) in its window); paused until \(TimeText.iso(ended.reconnectAt))",
            detail: "used_up=\(used.up) used_down=\(used.down) reconnect_at=\(ended.reconnectAt)"))
    }

    private func refuseLocked(_ s: inout State, _ p: Peer, at now: Int64) {
        if s.sessions[p.name] != nil { closeSessionLocked(&s, p, at: now, reason: .freeLimit) }
        if s.refused.insert(p.name).inserted {
            s.actions.append(.refuse(p.handle))
            s.actions.append(.endSession(p.handle))
        }
    }

    private func closeSessionLocked(_ s: inout State, _ p: Peer, at now: Int64, reason: SessionEndReason) {
        guard let live = s.sessions.removeValue(forKey: p.name) else { return }
        let bytes = device.byteCounts(p.handle)
        if reason != .shutdown && reason != .crash {  // idle too: the next packet needs a fresh handshake, which opens a new session
            s.actions.append(.endSession(p.handle))
        }
        sink.record(.sessionClosed(peer: p.name, at: max(now, live.startedAt), reason: reason,
                                   rx: bytes.rx &- live.rx0, tx: bytes.tx &- live.tx0), tier: p.tier)
        if reason == .freeLimit || reason == .idle {
            let w = s.windows[p.name]
            sink.record(.marker(
                at: now, label: "watchdog: \(p.name) session ended (\(reason.rawValue))",
                detail: w.map { "allowed_until=\($0.allowedUntil) reconnect_at=\($0.reconnectAt)" }))
        }
    }
}
