import Core
/// `peerTier`: the daemon changed `peer`'s tier in force (and wrote the override to the store).
public struct PeerTierReply: Hashable, Sendable, Codable {
    /// The peer's name.
    public var peer: String
    /// The tier now in force.
    public var tier: PeerTier
    /// The tier before the change.
    public var previous: PeerTier
    /// False when the store did not take the override yet (the daemon retries; it is in force).
    public var stored: Bool

    /// A reply from its fields.
    public init(peer: String, tier: PeerTier, previous: PeerTier, stored: Bool) {
        self.peer = peer
        self.tier = tier
        self.previous = previous
        self.stored = stored
    }
}
