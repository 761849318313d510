import Core

/// The free-session rules of DESIGN.md §6 as pure functions of the wall-clock time `now` (Unix
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
    /// The peer's phase at `now`.
    public static func phase(now: Int64, tier: PeerTier, window: WindowDates?) -> WatchdogPhase {
        guard tier == .free else { return .unlimited }
        guard let w = window else { return .noWindow }
        if now < w.allowedUntil { return .inWindow(w) }
        if now < w.reconnectAt { return .paused(w) }
        return .pauseOver(w)
    }

    /// §6.1–2: a peer with no live session completed a handshake at `now`.
    public static func onConnect(now: Int64, tier: PeerTier, window: WindowDates?, config: WatchdogConfig) -> ConnectDecision {
        switch phase(now: now, tier: tier, window: window) {
        case .unlimited: return .admitUnlimited
        case .noWindow, .pauseOver: return .openWindow(newWindow(now: now, config: config))
        case .inWindow(let w): return .resume(w)
        case .paused(let w): return .refuse(w)
        }
    }

    /// A window opened at `now`.
    public static func newWindow(now: Int64, config: WatchdogConfig) -> WindowDates {
        let until = now &+ config.freeSessionMs
        return WindowDates(allowedUntil: until, reconnectAt: until &+ config.freePauseMs)
    }

    /// §6.3–4, §6.7: the tick at `now`. `session` is the live session's last handshake time, nil
    /// when the peer has no live session.
    public static func onTick(now: Int64, tier: PeerTier, window: WindowDates?, sessionLastHandshake: Int64?,
                              config: WatchdogConfig) -> TickDecision
    {
        let p = phase(now: now, tier: tier, window: window)
        var d = TickDecision(refuse: false)
        if case .paused = p { d.refuse = true }
        guard let last = sessionLastHandshake else { return d }
        switch p {
        case .paused, .pauseOver:
            // The window ended while the session was live (or the clock jumped past it).
            d.endSession = .freeLimit
            return d
        case .noWindow:
            // A connected peer moved to free: its window starts now (not at a later reconnect,
            // which would let a peer that never disconnects stay unlimited).
            d.openWindow = newWindow(now: now, config: config)
        case .unlimited, .inWindow:
            break
        }
        if now &- last >= config.idleMs { d.endSession = .idle }
        return d
    }

    /// Seconds (rounded up) from `now` to `date`, never negative.
    public static func secondsLeft(now: Int64, until date: Int64) -> Int64 {
        date <= now ? 0 : (date - now + 999) / 1000
    }
}
