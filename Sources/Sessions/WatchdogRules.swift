import Core

/// The free-session rules of docs/session.md as pure functions of the wall-clock time `now` (Unix
/// epoch ms), the peer's tier, the configuration and its stored dates. No I/O, no clock reads:
/// `Watchdog` feeds them and applies the answers.
///
/// Boundaries: the window is `[start, allowedUntil)`, the pause `[allowedUntil, reconnectAt)`;
/// at exactly `allowedUntil` the peer is paused, at exactly `reconnectAt` it may open a new window.
///
/// Clock steps: `now` is the watchdog's time (`WatchdogClock`), which never steps; when the wall
/// clock steps, the watchdog moves every stored date by the step (`WindowDates.shifted(by:)`), so
/// the remaining real time of a window or pause never changes. At a start, `StartClock` says how
/// the stored dates meet the wall clock. The cases are the table in docs/session.md.
public enum WatchdogRules {
    /// The peer's phase at `now` under `limits` (a peer without a session time or a quota is
    /// unlimited).
    public static func phase(now: Int64, limits: PeerLimits, window: WindowDates?) -> WatchdogPhase {
        guard limits.isWindowed else { return .unlimited }
        guard let w = window else { return .noWindow }
        if now < w.allowedUntil { return .inWindow(w) }
        if now < w.reconnectAt { return .paused(w) }
        return .pauseOver(w)
    }

    /// §6.1–2: a peer with no live session completed a handshake at `now`.
    public static func onConnect(now: Int64, limits: PeerLimits, window: WindowDates?) -> ConnectDecision {
        switch phase(now: now, limits: limits, window: window) {
        case .unlimited: return .admitUnlimited
        case .noWindow, .pauseOver: return .openWindow(newWindow(now: now, limits: limits))
        case .inWindow(let w): return .resume(w)
        case .paused(let w): return .refuse(w)
        }
    }

    /// A window opened at `now`: `Session` long (no end when only a quota limits it), then `Pause`.
    public static func newWindow(now: Int64, limits: PeerLimits) -> WindowDates {
        guard let session = limits.sessionMs else {
            return WindowDates(allowedUntil: WindowDates.noEnd, reconnectAt: WindowDates.noEnd &+ limits.pauseMs)
        }
        let until = now &+ session
        return WindowDates(allowedUntil: until, reconnectAt: until &+ limits.pauseMs)
    }

    /// The window `w` ended early at `now` (its quota is used up): it ends now and its pause
    /// starts now (`Pause` long). A window that already ended is returned unchanged.
    public static func endedEarly(_ w: WindowDates, now: Int64, limits: PeerLimits) -> WindowDates {
        guard now < w.allowedUntil else { return w }
        return WindowDates(allowedUntil: now, reconnectAt: now &+ limits.pauseMs)
    }

    /// Why a peer is refused in the pause after a window that carried `used`: `quota pause` when
    /// the window's use reached a quota (the quota ended it early), else `free-limit pause` (its
    /// Session time ran out). The one wording: refusal rows, `explain PEER` and the journal's
    /// reason (`quota-pause` / `free-pause`) derive from it.
    public static func pauseReason(used: ByteUse, limits: PeerLimits) -> PauseReason {
        limits.quotaReached(used) ? .quota : .sessionTime
    }

    /// What ended the window a peer is paused after.
    public enum PauseReason: Sendable, Hashable {
        case sessionTime
        case quota
        /// As refusal rows and `explain PEER` say it.
        public var text: String { self == .quota ? "quota pause" : "free-limit pause" }
        /// As the live ring carries it.
        public var refusalCode: RefusalCode { self == .quota ? .quotaPause : .freePause }
        /// As journal events say it (`REASON=`; the code's name, as `tunnelctl watch` prints it).
        public var eventReason: String { refusalCode.name }
    }

    /// True when the bytes used in a window reach one of the quotas of `limits` (up: what the
    /// peer sent, down: what it received).
    public static func quotaReached(up: UInt64, down: UInt64, limits: PeerLimits) -> Bool {
        limits.quotaReached(ByteUse(up: up, down: down))
    }

    /// The bytes a window may still carry before a quota is reached, each way (nil: that way is
    /// not limited). The data path stops forwarding the peer once one reaches zero.
    public static func quotaLeft(up: UInt64, down: UInt64, limits: PeerLimits) -> (up: UInt64?, down: UInt64?) {
        func left(_ q: UInt64?, _ used: UInt64) -> UInt64? { q.map { $0 > used ? $0 - used : 0 } }
        let total = left(limits.quotaBytes, up &+ down)
        let u = [left(limits.quotaUpBytes, up), total].compactMap { $0 }.min()
        let d = [left(limits.quotaDownBytes, down), total].compactMap { $0 }.min()
        return (u, d)
    }

    /// §6.3–4, §6.7: the tick at `now`. `sessionLastHandshake` is the live session's last
    /// handshake time, nil when the peer has no live session; `lastTraffic` the last time the
    /// session carried data (its start when none yet), for `IdleTimeout`.
    public static func onTick(now: Int64, limits: PeerLimits, window: WindowDates?, sessionLastHandshake: Int64?,
                              lastTraffic: Int64? = nil, config: WatchdogConfig) -> TickDecision
    {
        let p = phase(now: now, limits: limits, window: window)
        var d = TickDecision(refuse: false)
        if case .paused = p { d.refuse = true }
        guard let last = sessionLastHandshake else { return d }
        switch p {
        case .paused, .pauseOver:
            // The window ended while the session was live (or the clock jumped past it).
            d.endSession = .freeLimit
            return d
        case .noWindow:
            // A connected peer moved to a windowed tier: its window starts now (not at a later
            // reconnect, which would let a peer that never disconnects stay unlimited).
            d.openWindow = newWindow(now: now, limits: limits)
        case .unlimited, .inWindow:
            break
        }
        if idle(now: now, lastHandshake: last, lastTraffic: lastTraffic, limits: limits, config: config) { d.endSession = .idle }
        return d
    }

    /// A live session is idle at `now` when it had no handshake for `config.idleMs` (WireGuard's
    /// REJECT_AFTER_TIME: the client is gone), or, with `IdleTimeout`, no traffic for that long.
    /// Exactly at the boundary it is idle.
    public static func idle(now: Int64, lastHandshake: Int64, lastTraffic: Int64?, limits: PeerLimits, config: WatchdogConfig) -> Bool {
        if now &- lastHandshake >= config.idleMs { return true }
        if let t = limits.idleTimeoutMs, now &- (lastTraffic ?? lastHandshake) >= t { return true }
        return false
    }

    /// Seconds (rounded up) from `now` to `date`, never negative.
    public static func secondsLeft(now: Int64, until date: Int64) -> Int64 {
        date <= now ? 0 : (date - now + 999) / 1000
    }
}

extension WatchdogRules {
    /// `phase` for a predefined tier without `[Tier]` sections (`free` windowed, others unlimited).
    public static func phase(now: Int64, tier: PeerTier, window: WindowDates?) -> WatchdogPhase {
        phase(now: now, limits: tier == .free ? PeerLimits(sessionMs: 1, pauseMs: 0) : .unlimited, window: window)
    }

    /// `onConnect` for a tier of `tiers` (no peer overrides).
    public static func onConnect(now: Int64, tier: PeerTier, window: WindowDates?, tiers: TierClasses) -> ConnectDecision {
        onConnect(now: now, limits: tiers.resolve(tier: tier), window: window)
    }

    /// `newWindow` for the free tier of `tiers`.
    public static func newWindow(now: Int64, tiers: TierClasses) -> WindowDates {
        newWindow(now: now, limits: tiers.resolve(tier: .free))
    }

    /// `onTick` for a tier of `tiers` (no peer overrides) under `config`.
    public static func onTick(now: Int64, tier: PeerTier, window: WindowDates?, sessionLastHandshake: Int64?,
                              tiers: TierClasses, config: WatchdogConfig) -> TickDecision
    {
        onTick(now: now, limits: tiers.resolve(tier: tier), window: window, sessionLastHandshake: sessionLastHandshake,
               config: config)
    }
}
