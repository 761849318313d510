import Core
/// A marker to add; it is attached to the audit session open at the time, if any.
public struct MarkerInput: Sendable {
    /// When, Unix epoch ms.
    public var at: Int64
    /// The text the operator or daemon gave.
    public var label: String
    /// What kind of row this is.
    public var kind: MarkerKind
    /// How much of each packet is kept / free text.
    public var detail: String?

    /// A marker record.
    public init(at: Int64, label: String, kind: MarkerKind, detail: String? = nil) {
        self.at = at
        self.label = label
        self.kind = kind
        self.detail = detail
    }
}
