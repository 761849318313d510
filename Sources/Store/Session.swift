/// One row of `sessions`: a peer's connected period.
public struct Session: Hashable, Sendable {
    public var id: Int64
    public var peer: String
    public var startedAt: Int64
    /// nil while the session is open.
    public var endedAt: Int64?
    public var endReason: SessionEndReason?
    /// Bytes received from / sent to the peer over the session.
    public var rxBytes: Int64
    public var txBytes: Int64
}
