/// What the capture module removed (or would remove, in a dry run).
import Core
public struct CapturePruneResult: Sendable, Equatable {
    /// Files removed (or due).
    public var files: Int
    /// Bytes removed (or due).
    public var bytes: Int64

    /// A result.
    public init(files: Int, bytes: Int64) {
        self.files = files
        self.bytes = bytes
    }
}
