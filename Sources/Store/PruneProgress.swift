import Core
/// Progress of a prune, reported after every batch.
public struct PruneProgress: Sendable, Equatable {
    /// The family being pruned.
    public var family: PruneFamily
    /// Rows of this family removed so far.
    public var removed: Int
    /// Rows of this family that were due when it started (an estimate; the daemon keeps writing).
    public var total: Int
}
