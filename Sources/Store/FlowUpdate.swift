import Core
/// An update of a live flow: totals, last activity and a host learned after the first packet.
/// The row's decision is its opening one and is never updated (a later decision that refuses
/// the flow is a refusal row). Updates of one flow in one batch are coalesced: only the newest
/// is written.
public struct FlowUpdate: Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// Last packet time, Unix epoch ms.
    public var lastSeen: Int64
    /// Byte and packet totals.
    public var counters: FlowCounters
    /// A host learned since the flow opened; nil keeps the stored one.
    public var host: String?
    /// Where the flow's first captured packet is, when capture started after the flow opened: the
    /// row takes it only if it has no location yet (the first one stays); nil keeps the stored one.
    public var capture: CaptureLocation?

    /// A flow-updated record.
    public init(id: Int64, lastSeen: Int64, counters: FlowCounters, host: String? = nil, capture: CaptureLocation? = nil) {
        self.id = id
        self.lastSeen = lastSeen
        self.counters = counters
        self.host = host
        self.capture = capture
    }
}
