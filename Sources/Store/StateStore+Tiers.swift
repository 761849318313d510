import Core
/// Runtime tier overrides (`tunnelctl peer tier NAME free|premium`, docs/session.md).
extension StateStore {
    /// `peer`'s override, or nil when the config file's tier applies.
    public func tierOverride(peer: String) throws -> TierOverride? {
        let s = try connection.prepared("SELECT peer, tier, changed_at FROM peer_tiers WHERE peer = ?")
        defer { s.reset() }
        s.bind(1, peer)
        guard try s.step(), let tier = PeerTier(rawValue: s.text(1)) else { return nil }
        return TierOverride(peer: s.text(0), tier: tier, changedAt: s.int64(2))
    }

    /// Every override, by peer name.
    public func tierOverrides() throws -> [TierOverride] {
        let s = try connection.prepared("SELECT peer, tier, changed_at FROM peer_tiers ORDER BY peer")
        defer { s.reset() }
        var out: [TierOverride] = []
        while try s.step() {
            if let tier = PeerTier(rawValue: s.text(1)) { out.append(TierOverride(peer: s.text(0), tier: tier, changedAt: s.int64(2))) }
        }
        return out
    }

    /// Sets `peer`'s tier. The peer's window is kept whatever the tier (docs/session.md, "Tier
    /// changes"): premium ignores it, and a move back to free finds the pause it was in, so a
    /// quick premium-and-back never hands out a fresh window.
    public func setTier(peer: String, tier: PeerTier, at: Int64) throws {
        let s = try connection.prepared("""
            INSERT INTO peer_tiers (peer, tier, changed_at) VALUES (?, ?, ?)
            ON CONFLICT (peer) DO UPDATE SET tier = excluded.tier, changed_at = excluded.changed_at
            """)
        s.bind(1, peer)
        s.bind(2, tier.rawValue)
        s.bind(3, at)
        try s.run()
    }

    /// Removes `peer`'s override (the config file's tier applies again).
    public func clearTier(peer: String) throws {
        let s = try connection.prepared("DELETE FROM peer_tiers WHERE peer = ?")
        s.bind(1, peer)
        try s.run()
    }
}
