/// A free peer's two stored dates (DESIGN.md §6), Unix epoch milliseconds (wall clock).
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
