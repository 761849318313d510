/// One row of `markers`.
public struct Marker: Hashable, Sendable {
    public var id: Int64
    public var at: Int64
    public var label: String
    public var kind: MarkerKind
    /// The audit session open when it was placed, if any.
    public var auditSessionId: Int64?
    /// Free text (e.g. `generation=4 rules=3f2a…`).
    public var detail: String?
}
