/// A marker to add; it is attached to the audit session open at the time, if any.
public struct MarkerInput: Sendable {
    public var at: Int64
    public var label: String
    public var kind: MarkerKind
    public var detail: String?

    /// A marker record.
    public init(at: Int64, label: String, kind: MarkerKind, detail: String? = nil) {
        self.at = at
        self.label = label
        self.kind = kind
        self.detail = detail
    }
}
