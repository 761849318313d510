/// A history row with the gateway that recorded it (`GatewayName`). Rows read from this
/// router's own `state.db` have `gateway == nil`: every row there is this gateway's. Reads like
/// the row itself (`r.peer`, `r.id`).
@dynamicMemberLookup
public struct Gatewayed<Row: Sendable>: Sendable {
    /// The gateway that recorded the row; nil for the local store.
    public var gateway: String?
    /// The row.
    public var row: Row

    /// A row.
    public init(gateway: String?, row: Row) {
        self.gateway = gateway
        self.row = row
    }

    public subscript<T>(dynamicMember keyPath: KeyPath<Row, T>) -> T { row[keyPath: keyPath] }
}

extension Gatewayed: Equatable where Row: Equatable {}
extension Gatewayed: Hashable where Row: Hashable {}

/// The history the read commands show (`tunnelctl flows`, `refusals`, `sessions`, `timeline`),
/// from the local store or from the shared store of several gateways — one set of questions,
/// answered alike by both (`StateStore`, `SharedState`). Orders and cut-offs are the local
/// store's: flows by `last_seen`, refusals by `last_at`, sessions by start (those open at or after
/// `since`), newest first; markers oldest first. `gateway` narrows to one gateway's rows (the
/// local store has only its own and ignores it).
public protocol HistoryReading: AnyObject {
    /// Flows active at or after `since`, newest first; at most `limit`.
    func historyFlows(since: Int64, peer: String?, gateway: String?, blockedOnly: Bool, limit: Int) throws -> [Gatewayed<Flow>]
    /// Refusals whose last attempt is at or after `since`, newest first; at most `limit`.
    func historyRefusals(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Refusal>]
    /// Sessions open at or after `since`, newest first; at most `limit`.
    func historySessions(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Session>]
    /// Markers at or after `since`, oldest first; at most `limit`.
    func historyMarkers(since: Int64, gateway: String?, limit: Int) throws -> [Gatewayed<Marker>]
    /// Runs `body` so that every read in it sees one snapshot.
    func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T
}

extension StateStore: HistoryReading {
    public func historyFlows(since: Int64, peer: String?, gateway: String?, blockedOnly: Bool, limit: Int) throws -> [Gatewayed<Flow>] {
        try flows(since: since, peer: peer, blockedOnly: blockedOnly, limit: limit).map { Gatewayed(gateway: nil, row: $0) }
    }

    public func historyRefusals(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Refusal>] {
        try refusals(since: since, peer: peer, limit: limit).map { Gatewayed(gateway: nil, row: $0) }
    }

    public func historySessions(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Session>] {
        try sessions(since: since, peer: peer, limit: limit).map { Gatewayed(gateway: nil, row: $0) }
    }

    public func historyMarkers(since: Int64, gateway: String?, limit: Int) throws -> [Gatewayed<Marker>] {
        try markers(since: since, limit: limit).map { Gatewayed(gateway: nil, row: $0) }
    }

    public func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T { try connection.read(body) }
}
