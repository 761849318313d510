/// A vocabulary value whose one text form is its `name` (`Verdict`, `Direction`, `IPProtocol`):
/// JSON carries the name, decoding refuses any other text with the kind of value it expected.
public protocol NamedValue: Codable {
    /// The value's text form.
    var name: String { get }
    /// Parses the text form; nil for anything else.
    init?<S: StringProtocol>(name: S)
    /// What the value is, for decoding errors (`verdict`, `direction (in, out)`).
    static var kindName: String { get }
}

extension NamedValue {
    /// Decodes the name.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let v = Self(name: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not a \(Self.kindName)")
        }
        self = v
    }

    /// Encodes the name.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }
}
