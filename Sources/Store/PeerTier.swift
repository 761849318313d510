/// A peer's tier (DESIGN.md §6.5).
public enum PeerTier: String, Sendable, CaseIterable {
    case free, premium
}
