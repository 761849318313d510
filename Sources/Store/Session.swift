import Core
/// One row of `sessions`: a peer's connected period.
public struct Session: Hashable, Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// The peer's name.
    public var peer: String
    /// Start, Unix epoch ms.
    public var startedAt: Int64
    /// nil while the session is open.
    public var endedAt: Int64?
    /// Why it ended; nil while open.
    public var endReason: SessionEndReason?
    /// Bytes received from / sent to the peer over the session.
    public var rxBytes: Int64
    /// Bytes sent to the peer.
    public var txBytes: Int64
}
