import Core
/// One row of `peer_tiers`: a runtime tier change that overrides the config file.
public struct TierOverride: Hashable, Sendable {
    /// The peer's name.
    public var peer: String
    /// The tier in force for the peer.
    public var tier: PeerTier
    /// When it was set, Unix epoch ms.
    public var changedAt: Int64
}
