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

/// Cut-offs of a history prune (Unix epoch ms, per family): rows strictly older go; nil keeps
/// the family. Built from the same retention settings as the local prune (`RetentionSettings`).
public struct HistoryCutoffs: Hashable, Sendable {
    /// Flows by `last_seen`.
    public var flows: Int64?
    /// Ended sessions by `ended_at` (open sessions are never pruned).
    public var sessions: Int64?
    /// Refusals by `last_at`.
    public var refusals: Int64?
    /// Markers by `at`.
    public var markers: Int64?

    /// Cut-offs.
    public init(flows: Int64? = nil, sessions: Int64? = nil, refusals: Int64? = nil, markers: Int64? = nil) {
        self.flows = flows
        self.sessions = sessions
        self.refusals = refusals
        self.markers = markers
    }

    /// One cut-off for every family.
    public init(all before: Int64) {
        self.init(flows: before, sessions: before, refusals: before, markers: before)
    }

    /// `retention` at `now`: each family's `now - maxAge` (nil: kept forever).
    public init(retention: RetentionSettings, now: Int64) {
        func cut(_ f: PruneFamily) -> Int64? { retention.maxAge(for: f).map { now - $0 } }
        self.init(flows: cut(.flows), sessions: cut(.sessions), refusals: cut(.refusals), markers: cut(.markers))
    }

    /// Rows one shared-store prune statement deletes at most (the scheduled prune and `tunnelctl
    /// prune` alike).
    public static let rowsPerStatement = 5_000

    /// The shared schema's (table, time column, cut-off, count) of each family to prune.
    var targets: [(table: String, column: String, before: Int64, count: WritableKeyPath<HistoryCounts, Int64>)] {
        let all: [(String, String, Int64?, WritableKeyPath<HistoryCounts, Int64>)] = [
            ("tv_flows", "last_seen", flows, \.flows), ("tv_sessions", "ended_at", sessions, \.sessions),
            ("tv_refusals", "last_at", refusals, \.refusals), ("tv_markers", "at", markers, \.markers),
        ]
        return all.compactMap { t in t.2.map { (t.0, t.1, $0, t.3) } }
    }
}

extension HistoryCounts {
    /// Rows over every family.
    public var total: Int64 { flows + sessions + refusals + markers }
}
