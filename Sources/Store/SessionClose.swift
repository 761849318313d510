import Core
/// Ends `peer`'s open session.
public struct SessionClose: Sendable {
    /// The peer's name.
    public var peer: String
    /// When, Unix epoch ms.
    public var at: Int64
    /// Why (close reason, refusal reason, or session end reason).
    public var reason: SessionEndReason
    /// Bytes received from the peer.
    public var rxBytes: UInt64
    /// Bytes sent to the peer.
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
