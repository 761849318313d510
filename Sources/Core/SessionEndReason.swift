/// Why a session ended (docs/session.md), plus `crash` for sessions a restarted daemon found open.
public enum SessionEndReason: String, Sendable, CaseIterable {
    case freeLimit = "free-limit"
    case adminKick = "admin-kick"
    case idle
    case shutdown
    case removed
    case crash
    /// The peer was disabled (`tunnelctl peer disable`, `Disabled = true`).
    case disabled
    /// The peer's `Expires` date passed.
    case expired
    /// The window's byte quota was used up (`Quota`, `QuotaUp`, `QuotaDown`).
    case quota
}
