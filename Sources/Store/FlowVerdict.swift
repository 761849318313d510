/// A flow's verdict as stored in `flows.verdict` (DESIGN.md §5).
public enum FlowVerdict: String, Sendable, CaseIterable {
    case allow, block, reject
    /// Held until its host is known.
    case pending
}
