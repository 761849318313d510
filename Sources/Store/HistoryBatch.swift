import Core

/// History rows one gateway ships from its local journal.
public struct HistoryBatch: Sendable {
    /// The gateway the rows come from (`GatewayName`); with each row's id, the row's key.
    public var gateway: String
    /// Flow rows (open or closed), keyed by the daemon's flow id.
    public var flows: [Flow]
    /// Session rows, keyed by their local id.
    public var sessions: [Session]
    /// Refusal rows (coalesced counts), keyed by their local id.
    public var refusals: [Refusal]
    /// Marker rows, keyed by their local id.
    public var markers: [Marker]

    /// Per family, how many of the first rows are new: inserted locally since the last batch
    /// shipped, so the shared store does not hold them unless this batch is shipped again (a
    /// crash between ship and acknowledge). A backend may insert those without an upsert and
    /// must fall back to upserting when one is there after all. Zero (the default): upsert all.
    public var new: HistoryCounts

    /// A batch.
    public init(gateway: String, flows: [Flow] = [], sessions: [Session] = [], refusals: [Refusal] = [], markers: [Marker] = [],
                new: HistoryCounts = HistoryCounts()) {
        self.gateway = gateway
        self.flows = flows
        self.sessions = sessions
        self.refusals = refusals
        self.markers = markers
        self.new = new
    }

    /// Rows in the batch.
    public var count: Int { flows.count + sessions.count + refusals.count + markers.count }
}

/// Rows of history per family.
public struct HistoryCounts: Hashable, Sendable {
    public var flows: Int64
    public var sessions: Int64
    public var refusals: Int64
    public var markers: Int64

    /// Counts.
    public init(flows: Int64 = 0, sessions: Int64 = 0, refusals: Int64 = 0, markers: Int64 = 0) {
        self.flows = flows
        self.sessions = sessions
        self.refusals = refusals
        self.markers = markers
    }
}
