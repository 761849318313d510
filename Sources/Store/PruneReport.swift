import Core
/// What a prune removed (or, with `dryRun`, would remove).
public struct PruneReport: Sendable, Equatable {
    /// True when nothing was changed.
    public var dryRun: Bool
    /// Rows removed per family (every family present, 0 when nothing was due or no limit is set).
    public var rows: [PruneFamily: Int]
    /// The cut-off used per family (rows strictly older were due); absent when kept forever.
    public var cutoffs: [PruneFamily: Int64]
    /// Bytes the database file gave back (pages freed by incremental vacuum × page size).
    public var bytesReclaimed: Int64
    /// The capture module's answer, when a capture hook was given.
    public var capture: CapturePruneResult?

    /// Rows over all families.
    public var totalRows: Int { rows.values.reduce(0, +) }
}
