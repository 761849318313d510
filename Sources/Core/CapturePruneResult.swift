/// What pruning the capture directory removed (or, in a dry run, would remove).
public struct CapturePruneResult: Hashable, Sendable {
    /// Files removed (or due).
    public var files: Int
    /// Bytes removed (or due).
    public var bytes: Int64
    /// Their sequence numbers, oldest first.
    public var removedSequences: [UInt32]

    /// A result from its parts.
    public init(files: Int, bytes: Int64, removedSequences: [UInt32] = []) {
        self.files = files
        self.bytes = bytes
        self.removedSequences = removedSequences
    }

    /// Nothing removed.
    public static let none = CapturePruneResult(files: 0, bytes: 0)
}
