/// What the pruner asks the capture module to delete: pcap files older than `olderThan`
/// (Unix epoch ms; nil = no age limit), then the oldest files until the rest fit in
/// `maxTotalBytes` (nil = no size limit). With `dryRun`, only count.
public struct CapturePruneRequest: Sendable, Equatable {
    public var olderThan: Int64?
    public var maxTotalBytes: Int64?
    public var dryRun: Bool
}
