/// What `CaptureFiles.prune` removed.
import Core
public struct CapturePruneResult: Hashable, Sendable {
    /// Files deleted, oldest first.
    public var removed: [CaptureFileInfo]
    /// Bytes freed.
    public var bytes: Int { removed.reduce(0) { $0 + $1.size } }
    /// Number of files deleted.
    public var files: Int { removed.count }

    public init(removed: [CaptureFileInfo]) { self.removed = removed }
}
