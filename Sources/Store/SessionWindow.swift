import Core
/// A free peer's window (docs/session.md): connected until `allowedUntil`, refused until `reconnectAt`.
public struct SessionWindow: Hashable, Sendable {
    /// The peer's name.
    public var peer: String
    /// End of the connected window, Unix epoch ms.
    public var allowedUntil: Int64
    /// End of the pause (`allowedUntil + FreePause`), Unix epoch ms.
    public var reconnectAt: Int64
    /// Bytes the peer sent in this window (quota accounting).
    public var usedUp: UInt64 = 0
    /// Bytes the peer received in this window.
    public var usedDown: UInt64 = 0

    /// A window.
    public init(peer: String, allowedUntil: Int64, reconnectAt: Int64, usedUp: UInt64 = 0, usedDown: UInt64 = 0) {
        self.peer = peer
        self.allowedUntil = allowedUntil
        self.reconnectAt = reconnectAt
        self.usedUp = usedUp
        self.usedDown = usedDown
    }
}

extension SessionWindow {
    /// The window for `peer` with `dates`.
    public init(peer: String, dates: WindowDates, usedUp: UInt64 = 0, usedDown: UInt64 = 0) {
        self.init(peer: peer, allowedUntil: dates.allowedUntil, reconnectAt: dates.reconnectAt, usedUp: usedUp, usedDown: usedDown)
    }

    /// The two dates, as the session rules take them.
    public var dates: WindowDates { WindowDates(allowedUntil: allowedUntil, reconnectAt: reconnectAt) }
}
