import Core
/// One row of `markers`.
public struct Marker: Hashable, Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// When, Unix epoch ms.
    public var at: Int64
    /// The text the operator or daemon gave.
    public var label: String
    /// What kind of row this is.
    public var kind: MarkerKind
    /// The audit session open when it was placed, if any.
    public var auditSessionId: Int64?
    /// Free text (e.g. `generation=4 rules=3f2a…`).
    public var detail: String?
}
