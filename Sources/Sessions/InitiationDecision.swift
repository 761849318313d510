import Core

/// What the watchdog does with an authenticated initiation (`WatchdogRules.onInitiation`): a
/// value computed from memory, so the handshake thread never waits on anything.
public enum InitiationDecision: Sendable, Hashable {
    /// Answer it (the peer is let in: unlimited, in its window, or a new window opens when the
    /// handshake completes).
    case admit
    /// Send nothing back, for `code`; `endSession`: the peer's live session ends now, for that
    /// reason (a restriction, or a window that ended between passes).
    case refuse(RefusalCode, endSession: SessionEndReason?)
    /// A window opens for this connect: open `window` first, off the handshake thread (asked of
    /// the shared store when there is one, which may answer with another gateway's window; then
    /// written to disk), and answer the peer once it is open.
    case openFirst(window: WindowDates)
}

extension WatchdogRules {
    /// The decision on an authenticated initiation at `now`, before any response is built.
    ///
    /// - `restriction`: why the peer is refused whatever its tier (`disabled`, `expired`), or nil.
    /// - `limits`, `window`, `used`: its limits in force, its stored window and the bytes used in it.
    /// - `live`: it has a live session (this initiation is a rekey).
    /// - `openFirst`: no window opening for this peer was done off the handshake thread lately
    ///   (none asked yet, or the last one is stale). False once it was: the window is then in
    ///   memory (ours, or another gateway's adopted) and the decision is taken on it.
    public static func onInitiation(now: Int64, restriction: SessionEndReason?, limits: PeerLimits, window: WindowDates?,
                                    used: ByteUse, live: Bool, openFirst: Bool) -> InitiationDecision
    {
        if let restriction {
            return .refuse(restriction == .disabled ? .disabled : .expired, endSession: restriction)
        }
        let pauseCode = pauseReason(used: used, limits: limits).refusalCode
        if live {
            // A rekey of a live session; refused only when its window ended between passes.
            if case .paused = phase(now: now, limits: limits, window: window) {
                return .refuse(pauseCode, endSession: .freeLimit)
            }
            return .admit
        }
        switch onConnect(now: now, limits: limits, window: window) {
        case .admitUnlimited, .resume: return .admit
        case .openWindow(let w): return openFirst ? .openFirst(window: w) : .admit
        case .refuse: return .refuse(pauseCode, endSession: nil)
        }
    }
}
