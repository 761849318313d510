import Core
/// `kick`: the session of `peer` was ended with stop reason `admin-kick` (or there was none).
public struct KickReply: Hashable, Sendable, Codable {
    /// The peer's name.
    public var peer: String
    /// True when a live session was ended; false when the peer was not connected.
    public var endedSession: Bool

    /// A reply from its fields.
    public init(peer: String, endedSession: Bool) {
        self.peer = peer
        self.endedSession = endedSession
    }
}
