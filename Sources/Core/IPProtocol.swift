/// An IP protocol number (IANA "Assigned Internet Protocol Numbers").
public struct IPProtocol: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let icmp = IPProtocol(rawValue: 1)
    public static let tcp = IPProtocol(rawValue: 6)
    public static let udp = IPProtocol(rawValue: 17)
    public static let icmpv6 = IPProtocol(rawValue: 58)

    /// True for protocols whose headers carry ports (TCP, UDP).
    @inlinable public var hasPorts: Bool { self == .tcp || self == .udp }

    /// The protocols that have names: what rule files, FLOW text and `--json` spell.
    public static let named: [IPProtocol] = [.tcp, .udp, .icmp, .icmpv6]

    /// `tcp`, `udp`, `icmp`, `icmpv6`, or `proto-N` for any other number. The one spelling used in
    /// text output, `--json` (`"proto"`), store keys and rule files.
    public var name: String {
        switch self {
        case .tcp: return "tcp"
        case .udp: return "udp"
        case .icmp: return "icmp"
        case .icmpv6: return "icmpv6"
        default: return "proto-\(rawValue)"
        }
    }

    /// The protocol's `name`.
    public var description: String { name }

    /// Parses a protocol name (`tcp`, `udp`, `icmp`, `icmpv6`, also `ipv6-icmp`), `proto-N` or a
    /// number 0...255.
    public init?<S: StringProtocol>(name: S) {
        switch name.lowercased() {
        case "tcp": self = .tcp
        case "udp": self = .udp
        case "icmp": self = .icmp
        case "icmpv6", "ipv6-icmp": self = .icmpv6
        default:
            let digits = name.lowercased().hasPrefix("proto-") ? Substring(name.dropFirst(6)) : Substring(name)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt8(digits) else { return nil }
            self.init(rawValue: n)
        }
    }
}

extension IPProtocol: Codable {
    /// Decodes the name (`"tcp"`) or a number.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(UInt8.self) { self.init(rawValue: n); return }
        let text = try c.decode(String.self)
        guard let p = IPProtocol(name: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not a protocol")
        }
        self = p
    }

    /// Encodes the name (`"tcp"`, `"proto-47"`).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }
}
