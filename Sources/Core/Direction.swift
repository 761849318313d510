/// Which side of the gateway a packet or a flow comes from (docs/policy.md). `out` is from a peer
/// through the tunnel towards the LAN / Internet (a flow a peer originated: the common case);
/// `in` is from the LAN / Internet towards a peer. The policy's `in`/`out`, the live ring's
/// direction byte and every command's text and JSON use this one type and these two words.
public enum Direction: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// From a peer (decrypted, written to TUN); a flow a peer started.
    case out = 0
    /// Towards a peer (read from TUN, encrypted); a flow started towards a peer.
    case `in` = 1

    /// `out` or `in`.
    public var name: String { self == .out ? "out" : "in" }

    /// The `name`.
    public var description: String { name }

    /// Parses `out` or `in`.
    public init?(name: some StringProtocol) {
        switch name {
        case "out": self = .out
        case "in": self = .in
        default: return nil
        }
    }

    /// The other direction.
    public var reversed: Direction { self == .out ? .in : .out }
}

extension Direction: Codable {
    /// Decodes `"out"` or `"in"`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let d = Direction(name: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not a direction (in, out)")
        }
        self = d
    }

    /// Encodes the name.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }
}
