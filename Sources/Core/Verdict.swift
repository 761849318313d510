/// What the gateway does with a flow (docs/policy.md): the action of a rule or a default, the
/// verdict cached in the flow table, stored in `flows.verdict`, published in the live ring and
/// printed by every command. The one encoding: `rawValue` in binary records (ring slots), `name`
/// in text, SQL and JSON.
public enum Verdict: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Let the flow through.
    case allow = 0
    /// Drop silently.
    case block = 1
    /// Drop, and answer the peer with a TCP RST or an ICMP unreachable so it fails fast.
    case reject = 2
    /// Held until its host is known (a `host` rule could still decide it). Never a rule's action.
    case pending = 3

    /// The three actions a rule or a default can name.
    public static let actions: [Verdict] = [.allow, .block, .reject]

    /// `allow`, `block`, `reject` or `pending`.
    public var name: String {
        switch self {
        case .allow: return "allow"
        case .block: return "block"
        case .reject: return "reject"
        case .pending: return "pending"
        }
    }

    /// The `name`.
    public var description: String { name }

    /// True for `block` and `reject` (the flow's packets are dropped).
    public var drops: Bool { self == .block || self == .reject }

    /// Parses a verdict name (`allow`, `block`, `reject`, `pending`).
    public init?(name: some StringProtocol) {
        guard let v = Verdict.allCases.first(where: { $0.name == name }) else { return nil }
        self = v
    }

    /// Parses a rule action (`allow`, `block` or `reject`; not `pending`).
    public init?(action keyword: some StringProtocol) {
        guard let v = Verdict(name: keyword), v != .pending else { return nil }
        self = v
    }
}

extension Verdict: Codable {
    /// Decodes the name.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let v = Verdict(name: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not a verdict")
        }
        self = v
    }

    /// Encodes the name.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }
}
