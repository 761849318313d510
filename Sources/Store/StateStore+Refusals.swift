import Core
/// Refusals: coalesced upserts (docs/session.md) and the CLI's listing.
extension StateStore {
    static let upsertRefusalSQL = """
        INSERT INTO refusals (kind, peer, rule, flow_key, reason, window, count, first_at, last_at, host, rule_name, tier, generation)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11, ?12)
        ON CONFLICT (kind, peer, window, rule, flow_key, generation) DO UPDATE SET
          count = count + excluded.count,
          first_at = min(first_at, excluded.first_at),
          last_at = max(last_at, excluded.last_at),
          reason = excluded.reason,
          host = CASE WHEN excluded.host <> '' THEN excluded.host ELSE host END
        """

    /// Adds `event` to its coalesced row (creating it on the first attempt).
    public func recordRefusal(_ e: RefusalEvent) throws {
        let s = try hot(.upsertRefusal, StateStore.upsertRefusalSQL)
        s.bind(1, e.kind.rawValue)
        s.bind(2, e.peer)
        s.bind(3, e.rule)
        switch e.kind {
        case .session:
            s.bind(4, "")
            s.bind(6, e.windowEnd)
        case .flow:
            s.bind(4, StateStore.flowKey(proto: e.proto, dst: e.dst, dstPort: e.dstPort))
            s.bind(6, StateStore.flowRefusalBucket(e.at))
        }
        s.bind(5, e.reason)
        s.bind(7, max(1, e.count))
        s.bind(8, e.at)
        s.bind(9, e.kind == .flow ? (e.host ?? "") : "")
        s.bind(10, e.decision?.name)
        s.bind(11, e.decision?.tier)
        s.bind(12, Int64(truncatingIfNeeded: e.decision?.generation ?? 0))
        try s.run()
    }

    /// The start of the one-hour coalescing period containing `at` (floor, also for negative times).
    static func flowRefusalBucket(_ at: Int64) -> Int64 {
        let p = flowRefusalPeriodMs
        let q = at / p
        return (at % p < 0 ? q - 1 : q) * p
    }

    /// Refusal rows whose last attempt is at or after `since`, newest first, optionally only one
    /// peer's, one kind, or one flow key (`Store.flowKey`, for `tunnelctl explain FLOW`).
    public func refusals(since: Int64 = .min, peer: String? = nil, kind: RefusalKind? = nil, flowKey: String? = nil,
                         limit: Int = 10_000) throws -> [Refusal] {
        var sql = "SELECT \(StateStore.refusalColumns) FROM refusals WHERE last_at >= ?1"
        if peer != nil { sql += " AND peer = ?2" }
        if kind != nil { sql += " AND kind = ?4" }
        if flowKey != nil { sql += " AND flow_key = ?5" }
        sql += " ORDER BY last_at DESC, id DESC LIMIT ?3"
        let s = try connection.prepared(sql)
        defer { s.reset() }
        s.bind(1, since)
        if let peer { s.bind(2, peer) }
        s.bind(3, Int64(limit))
        if let kind { s.bind(4, kind.rawValue) }
        if let flowKey { s.bind(5, flowKey) }
        var out: [Refusal] = []
        while try s.step() { out.append(StateStore.refusal(from: s)) }
        return out
    }

    static let refusalColumns = "id, kind, peer, rule, flow_key, reason, window, count, first_at, last_at, host, rule_name, tier, generation"

    static func refusal(from s: Statement) -> Refusal {
        let rule = s.text(3), reason = s.text(5)
        return Refusal(id: s.int64(0), kind: RefusalKind(rawValue: s.text(1)) ?? .flow, peer: s.text(2),
                       rule: rule, flowKey: s.text(4), reason: reason, window: s.int64(6),
                       count: s.int64(7), firstAt: s.int64(8), lastAt: s.int64(9), host: s.text(10),
                       decision: DecidedRule.stored(generation: s.int64(13), place: rule == "default" ? nil : rule,
                                                    name: s.optionalText(11), reason: reason, tier: s.optionalText(12)))
    }
}
