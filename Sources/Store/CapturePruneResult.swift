/// What the capture module removed (or would remove, in a dry run).
public struct CapturePruneResult: Sendable, Equatable {
    public var files: Int
    public var bytes: Int64

    /// A result.
    public init(files: Int, bytes: Int64) {
        self.files = files
        self.bytes = bytes
    }
}
