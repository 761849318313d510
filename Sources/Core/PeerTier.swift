/// A peer's service tier (docs/session.md, docs/limits.md): the name of a tier class. `free` and
/// `premium` are predefined (free: `FreeSession` then `FreePause`; premium: no limit); any other
/// name is a `[Tier NAME]` section of the config, whose limits `LimitResolution` applies. The one
/// tier type: config, store, policy, control and CLI use it.
///
/// A tier name is 1–32 characters of `[a-z0-9_-]`, starting with a letter (lower case, as config
/// files and rule files write it). Whether a name is *configured* is the config's business
/// (`TierClasses`); this type only knows the spelling.
public struct PeerTier: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    /// The name.
    public let rawValue: String

    /// The tier called `rawValue`, when it is spelled like a tier name.
    public init?(rawValue: String) {
        guard PeerTier.isValidName(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(known: String) { rawValue = known }

    /// Parses a tier name (exact, lower case, as config files and rule files write it).
    public init?(keyword: some StringProtocol) {
        self.init(rawValue: String(keyword))
    }

    /// Session window (`FreeSession`) then pause (`FreePause`). The default when `Tier` is absent,
    /// so a forgotten line never grants unlimited service.
    public static let free = PeerTier(known: "free")
    /// No limit.
    public static let premium = PeerTier(known: "premium")

    /// The predefined tiers.
    public static let predefined: [PeerTier] = [.free, .premium]

    /// The predefined keywords, for usage text (a config may define more).
    public static var keywords: [String] { predefined.map(\.rawValue) }

    /// True when `s` is spelled like a tier name.
    public static func isValidName(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard (1...32).contains(u.count), (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(u[0]) else { return false }
        return u.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }
    }

    /// What to write when a tier name is misspelled.
    public static let nameRule = "a tier name is 1-32 characters of a-z, 0-9, _ and -, starting with a letter"

    /// The name.
    public var name: String { rawValue }
    /// The name.
    public var description: String { rawValue }

    public static func < (a: PeerTier, b: PeerTier) -> Bool { a.rawValue < b.rawValue }

    public init(from decoder: any Decoder) throws {
        let s = try decoder.singleValueContainer().decode(String.self)
        guard let t = PeerTier(rawValue: s) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(s)' is not a tier name"))
        }
        self = t
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}
