/// Ends `peer`'s open session.
public struct SessionClose: Sendable {
    public var peer: String
    public var at: Int64
    public var reason: SessionEndReason
    public var rxBytes: UInt64
    public var txBytes: UInt64

    /// A session-closed record.
    public init(peer: String, at: Int64, reason: SessionEndReason, rxBytes: UInt64 = 0, txBytes: UInt64 = 0) {
        self.peer = peer
        self.at = at
        self.reason = reason
        self.rxBytes = rxBytes
        self.txBytes = txBytes
    }
}
