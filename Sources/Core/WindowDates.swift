/// A free peer's two stored dates (docs/session.md), Unix epoch milliseconds (wall clock).
public struct WindowDates: Sendable, Hashable {
    /// End of the connected window.
    public var allowedUntil: Int64
    /// End of the pause (`allowedUntil + FreePause`).
    public var reconnectAt: Int64

    /// Dates from their parts.
    public init(allowedUntil: Int64, reconnectAt: Int64) {
        self.allowedUntil = allowedUntil
        self.reconnectAt = reconnectAt
    }
}

extension WindowDates {
    /// `allowedUntil` of a window with no time limit (a quota-only tier): far beyond any real
    /// date, with room to add a pause without overflow. The window ends when its quota is used.
    public static let noEnd: Int64 = 1 << 60

    /// True when the window has no time limit (it ends on its quota only).
    public var isOpenEnded: Bool { allowedUntil >= WindowDates.noEnd }
}
