import Core
/// A section as read: its header line and entries.
struct ConfigSection {
    var isInterface: Bool
    var line: Int
    /// `[Tier NAME]`: the tier (nil for `[Interface]` and `[Peer]`).
    var tier: PeerTier? = nil
    var entries: [ConfigEntry] = []
    /// The name a comment right above the header gives (`PeerNameComment`), and its line.
    var commentName: String?
    var commentLine = 0
}
