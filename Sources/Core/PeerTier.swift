/// A peer's service tier (DESIGN.md §6): free peers get a session window followed by a pause,
/// premium peers are unlimited. The one tier type: config, store, policy, control and CLI use it.
public enum PeerTier: String, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Session window (`FreeSession`) then pause (`FreePause`). The default when `Tier` is absent,
    /// so a forgotten line never grants unlimited service.
    case free
    /// No session limit.
    case premium

    /// Parses `free` or `premium` (exact, lower case, as config files and rule files write it).
    public init?(keyword: some StringProtocol) {
        self.init(rawValue: String(keyword))
    }

    /// The keyword: `free` or `premium`.
    public var name: String { rawValue }

    /// `free` or `premium`.
    public var description: String { rawValue }

    /// A small dense code for lookup tables (`free` 1, `premium` 2; 0 is left for "tier not
    /// given"). Not a storage or wire format: those use the keyword.
    public var code: UInt8 { self == .free ? 1 : 2 }

    /// Every keyword, for usage text and did-you-mean.
    public static var keywords: [String] { allCases.map(\.rawValue) }
}
