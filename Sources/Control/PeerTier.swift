/// A peer's service tier (DESIGN.md §6): free peers get a session window followed by a pause,
/// premium peers are unlimited.
public enum PeerTier: String, Hashable, Sendable, Codable, CaseIterable {
    /// Session window (`FreeSession`) then pause (`FreePause`). The default when `Tier` is absent,
    /// so a forgotten line never grants unlimited service.
    case free
    /// No session limit.
    case premium
}
