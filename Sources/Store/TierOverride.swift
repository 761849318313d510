/// One row of `peer_tiers`: a runtime tier change that overrides the config file.
public struct TierOverride: Hashable, Sendable {
    public var peer: String
    public var tier: PeerTier
    public var changedAt: Int64
}
