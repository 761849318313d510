import Core
/// A family of rows the pruner removes, each with its own retention age.
public enum PruneFamily: String, Sendable, CaseIterable {
    case flows, refusals, sessions, markers
    /// Audit sessions, pruned by the markers' age.
    case auditSessions = "audit-sessions"
}
