import Core
/// One row of `audit_sessions`: a labelled period of the operator's (at most one open).
public struct AuditSession: Hashable, Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// The text the operator or daemon gave.
    public var label: String
    /// Start, Unix epoch ms.
    public var startedAt: Int64
    /// nil while open.
    public var endedAt: Int64?

    /// An audit session value.
    public init(id: Int64, label: String, startedAt: Int64, endedAt: Int64?) {
        self.id = id
        self.label = label
        self.startedAt = startedAt
        self.endedAt = endedAt
    }
}
