/// What the pruner asks the capture module to delete: pcap files older than `olderThan`
/// (Unix epoch ms; nil = no age limit), then the oldest files until the rest fit in
/// `maxTotalBytes` (nil = no size limit). With `dryRun`, only count.
public struct CapturePruneRequest: Sendable, Equatable {
    /// Delete files whose newest packet is older than this (Unix epoch ms); nil = no age limit.
    public var olderThan: Int64?
    /// Then delete the oldest files until the rest fit; nil = no size limit.
    public var maxTotalBytes: Int64?
    /// Only count, change nothing.
    public var dryRun: Bool

    /// A request.
    public init(olderThan: Int64?, maxTotalBytes: Int64?, dryRun: Bool) {
        self.olderThan = olderThan
        self.maxTotalBytes = maxTotalBytes
        self.dryRun = dryRun
    }
}
