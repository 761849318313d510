import Core
import Engine
import Sessions

/// What one peer's status page (`StatusListen`, docs/limits.md "Status page") shows: the state of
/// that peer and nothing about any other. Built by ``PeerStatusPage/build(peer:view:restriction:quotaUsed:now:)``
/// from snapshots the daemon already keeps (the registry's `GatewayPeer` and its limits, the
/// watchdog's view, the config's restrictions, the quota counter); rendered by `StatusPageRender`.
/// Times are Unix epoch milliseconds (UTC).
public struct PeerStatusPage: Sendable, Hashable {
    /// Where the peer stands now (the JSON `state`).
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// A live session.
        case connected
        /// No live session; it may connect.
        case disconnected
        /// Its window ended; refused until ``PeerStatusPage/pauseEndMs``.
        case paused
        /// `Disabled = true` in the config.
        case disabled
        /// Past its `Expires` date.
        case expired
    }

    /// Bytes counted against the quota in the current window.
    public struct QuotaUse: Sendable, Hashable {
        /// What the peer sent.
        public var up: UInt64
        /// What the peer received.
        public var down: UInt64
        /// Both directions.
        public var total: UInt64 { up &+ down }
        /// A use from its parts.
        public init(up: UInt64, down: UInt64) {
            self.up = up
            self.down = down
        }
    }

    /// The peer's name.
    public var peer: String
    /// The tier in force (its keyword).
    public var tier: String
    /// When the page was built.
    public var nowMs: Int64
    /// Where the peer stands.
    public var state: State
    /// True while the gateway refuses its handshakes (pause, disabled, expired).
    public var refusedNow: Bool
    /// Start of the live session, if connected.
    public var connectedSinceMs: Int64?
    /// End of the current window while it is open (the session ends then, reason `free-limit`).
    public var windowEndMs: Int64?
    /// End of the pause while paused (it may reconnect then).
    public var pauseEndMs: Int64?
    /// Bytes used in the current window; nil: not counted (no quota counter in this daemon).
    public var quotaUsed: QuotaUse?
    /// The limits in force.
    public var limits: PeerLimits
    /// The `Expires` date, if any.
    public var expiresAtMs: Int64?
    /// `Disabled = true`.
    public var disabled: Bool

    /// A page from its fields.
    public init(peer: String, tier: String, nowMs: Int64, state: State, refusedNow: Bool = false,
                connectedSinceMs: Int64? = nil, windowEndMs: Int64? = nil, pauseEndMs: Int64? = nil,
                quotaUsed: QuotaUse? = nil, limits: PeerLimits = .unlimited, expiresAtMs: Int64? = nil, disabled: Bool = false)
    {
        self.peer = peer
        self.tier = tier
        self.nowMs = nowMs
        self.state = state
        self.refusedNow = refusedNow
        self.connectedSinceMs = connectedSinceMs
        self.windowEndMs = windowEndMs
        self.pauseEndMs = pauseEndMs
        self.quotaUsed = quotaUsed
        self.limits = limits
        self.expiresAtMs = expiresAtMs
        self.disabled = disabled
    }

    /// Session time left now: to the window's end while one is open, the whole `Session` when no
    /// window is open (the next connect opens one), 0 while paused; nil when no session limit applies.
    public var remainingSessionMs: Int64? {
        if let end = windowEndMs { return max(0, end - nowMs) }
        if state == .paused { return 0 }
        return limits.sessionMs
    }

    /// The page of `peer` at `now` from the watchdog's `view` (nil: the watchdog does not know the
    /// peer yet), the config's `restriction` and the quota counter's `quotaUsed` (nil: not counted).
    ///
    /// The limits and the quota use are the watchdog's (what it enforces); without a view, the
    /// registry's limits and `quotaUsed`. A window counts when the limits have one (a Session or a
    /// Quota); a window with no time limit shows no end.
    public static func build(peer: GatewayPeer, view: Watchdog.PeerView?, restriction: Watchdog.Restriction?,
                             quotaUsed: QuotaUse? = nil, now: Int64) -> PeerStatusPage
    {
        let tier = view?.tier ?? peer.tier
        let limits = view?.limits ?? peer.limits
        let quotaUsed = view?.used.map { QuotaUse(up: $0.up, down: $0.down) } ?? quotaUsed
        var page = PeerStatusPage(peer: peer.name, tier: tier.name, nowMs: now, state: .disconnected,
                                  refusedNow: view?.refused ?? false, quotaUsed: quotaUsed, limits: limits)
        switch restriction {
        case .disabled?: page.disabled = true
        case .expires(let at)?: page.expiresAtMs = at
        case nil: break
        }
        if limits.isWindowed, let w = view?.window {
            if now < w.allowedUntil {
                page.windowEndMs = w.isOpenEnded ? nil : w.allowedUntil
            } else if now < w.reconnectAt {
                page.pauseEndMs = w.reconnectAt
            }
        }
        if let live = view?.session { page.connectedSinceMs = live.startedAt }
        if page.disabled {
            page.state = .disabled
        } else if let at = page.expiresAtMs, now >= at {
            page.state = .expired
        } else if page.pauseEndMs != nil {
            page.state = .paused
        } else if page.connectedSinceMs != nil {
            page.state = .connected
        }
        return page
    }
}
