import Core
/// The end of a flow: final totals, time and reason (e.g. `fin`, `rst`, `idle`, `shutdown`).
public struct FlowClose: Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// Close time, Unix epoch ms (also the flow's last_seen if later).
    public var at: Int64
    /// Byte and packet totals.
    public var counters: FlowCounters
    /// Why (close reason, refusal reason, or session end reason).
    public var reason: String
    /// The flow's first capture location, taken only by a row without one (see `FlowUpdate.capture`).
    public var capture: CaptureLocation?
    /// The flow's last packet when it is not `at` (a flow closed by a shutdown: it ended when
    /// tunneld stopped, its last packet may be long before); nil: `at`.
    public var lastSeen: Int64?

    /// A flow-closed record.
    public init(id: Int64, at: Int64, counters: FlowCounters, reason: String, capture: CaptureLocation? = nil, lastSeen: Int64? = nil) {
        self.id = id
        self.at = at
        self.counters = counters
        self.reason = reason
        self.capture = capture
        self.lastSeen = lastSeen
    }
}
