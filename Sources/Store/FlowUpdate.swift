import Core
/// An update of a live flow: totals, last activity, a host learned after the first packet, and,
/// when the flow was decided again (a reload, a `during` boundary), the new decision as it was
/// taken. The periodic sweep sends no decision, so the stored one stays. Updates of one flow in
/// one batch are coalesced: only the newest is written, keeping the newest decision.
public struct FlowUpdate: Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// Last packet time, Unix epoch ms.
    public var lastSeen: Int64
    /// Byte and packet totals.
    public var counters: FlowCounters
    /// The verdict of a new decision; nil keeps the stored verdict and rule.
    public var verdict: Verdict?
    /// The new decision (with `verdict`); nil keeps the stored one.
    public var decision: DecidedRule?
    /// A host learned since the flow opened; nil keeps the stored one.
    public var host: String?
    /// Where the flow's first captured packet is, when capture started after the flow opened: the
    /// row takes it only if it has no location yet (the first one stays); nil keeps the stored one.
    public var capture: CaptureLocation?

    /// A flow-updated record.
    public init(id: Int64, lastSeen: Int64, counters: FlowCounters, verdict: Verdict? = nil, decision: DecidedRule? = nil,
                host: String? = nil, capture: CaptureLocation? = nil) {
        self.id = id
        self.lastSeen = lastSeen
        self.counters = counters
        self.verdict = verdict
        self.decision = decision
        self.host = host
        self.capture = capture
    }
}
