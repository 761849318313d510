import Core
/// Where a `[Peer]`'s name came from (wg-quick files name peers in comments).
public enum PeerNameOrigin: String, Hashable, Sendable {
    /// `Name = …` in the section.
    case nameKey
    /// A comment right above the section header (`### Client NAME`, `### begin NAME ###`,
    /// `# Client: NAME (…)`, `# Name = NAME`).
    case comment
    /// Nothing named it: `PeerName.fromKey` of its public key.
    case publicKey
}
