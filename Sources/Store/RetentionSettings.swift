import Core
/// How long history is kept (docs/store.md). nil means "keep forever" / "no size limit".
/// Markers and audit sessions have their own age so the audit trail outlives flows.
public struct RetentionSettings: Hashable, Sendable {
    /// Flows are kept this long after their last packet; nil = forever.
    public var flowsMaxAgeMs: Int64?
    /// Refusals are kept this long after their last attempt; nil = forever.
    public var refusalsMaxAgeMs: Int64?
    /// Ended sessions are kept this long; nil = forever.
    public var sessionsMaxAgeMs: Int64?
    /// Markers and audit sessions.
    public var markersMaxAgeMs: Int64?
    /// Total size of pcap files at most; nil = unlimited.
    public var pcapMaxBytes: Int64?
    /// pcap files are kept this long; nil = forever.
    public var pcapMaxAgeMs: Int64?

    /// Factory values: flows 7d, refusals 30d, sessions 90d, markers/audit 365d, pcap 2GiB and 7d.
    public static let factory = RetentionSettings(
        flowsMaxAgeMs: 7 * day, refusalsMaxAgeMs: 30 * day, sessionsMaxAgeMs: 90 * day, markersMaxAgeMs: 365 * day,
        pcapMaxBytes: 2 << 30, pcapMaxAgeMs: 7 * day)

    static let day: Int64 = 86_400_000

    /// Retention with every value given.
    public init(flowsMaxAgeMs: Int64?, refusalsMaxAgeMs: Int64?, sessionsMaxAgeMs: Int64?, markersMaxAgeMs: Int64?,
                pcapMaxBytes: Int64?, pcapMaxAgeMs: Int64?) {
        self.flowsMaxAgeMs = flowsMaxAgeMs
        self.refusalsMaxAgeMs = refusalsMaxAgeMs
        self.sessionsMaxAgeMs = sessionsMaxAgeMs
        self.markersMaxAgeMs = markersMaxAgeMs
        self.pcapMaxBytes = pcapMaxBytes
        self.pcapMaxAgeMs = pcapMaxAgeMs
    }
}
