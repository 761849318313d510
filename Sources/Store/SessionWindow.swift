import Core
/// A free peer's window (DESIGN.md §6): connected until `allowedUntil`, refused until `reconnectAt`.
public struct SessionWindow: Hashable, Sendable {
    /// The peer's name.
    public var peer: String
    /// End of the connected window, Unix epoch ms.
    public var allowedUntil: Int64
    /// End of the pause (`allowedUntil + FreePause`), Unix epoch ms.
    public var reconnectAt: Int64

    /// A window.
    public init(peer: String, allowedUntil: Int64, reconnectAt: Int64) {
        self.peer = peer
        self.allowedUntil = allowedUntil
        self.reconnectAt = reconnectAt
    }
}

extension SessionWindow {
    /// The window for `peer` with `dates`.
    public init(peer: String, dates: WindowDates) {
        self.init(peer: peer, allowedUntil: dates.allowedUntil, reconnectAt: dates.reconnectAt)
    }

    /// The two dates, as the session rules take them.
    public var dates: WindowDates { WindowDates(allowedUntil: allowedUntil, reconnectAt: reconnectAt) }
}
