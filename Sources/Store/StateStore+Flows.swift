import Core
/// Flows: written by the daemon (through `StoreWriter`), read by `tunnelctl flows` / `explain`.
extension StateStore {
    static let flowColumns = """
        id, proto, src_addr, src_port, dst_addr, dst_port, peer, host, first_seen, last_seen, bytes_out, bytes_in, \
        packets_out, packets_in, verdict, rule, capture_file, capture_offset, closed_at, close_reason, \
        rule_name, reason, tier, generation
        """

    static let insertFlowSQL = """
        INSERT INTO flows (\(flowColumns)) VALUES (?,?,?,?,?,?,?,?,?,?,0,0,0,0,?,?,?,?,NULL,NULL,?,?,?,?)
        ON CONFLICT (id) DO UPDATE SET proto = excluded.proto, src_addr = excluded.src_addr,
          src_port = excluded.src_port, dst_addr = excluded.dst_addr, dst_port = excluded.dst_port,
          peer = excluded.peer, host = excluded.host, first_seen = excluded.first_seen,
          last_seen = excluded.last_seen, verdict = excluded.verdict, rule = excluded.rule,
          capture_file = excluded.capture_file, capture_offset = excluded.capture_offset,
          closed_at = NULL, close_reason = NULL, rule_name = excluded.rule_name, reason = excluded.reason,
          tier = excluded.tier, generation = excluded.generation
        """
    // A capture location (?10 file, ?11 offset) fills a row that has none; the first one stays.
    // (SET expressions see the row as it was, so both test the old capture_file.) The decision
    // columns are the opening decision's and are never updated.
    static let updateFlowSQL = """
        UPDATE flows SET last_seen = max(last_seen, ?2), bytes_out = ?3, bytes_in = ?4, packets_out = ?5,
          packets_in = ?6, host = coalesce(?9, host),
          capture_file = CASE WHEN capture_file IS NULL AND ?11 IS NOT NULL THEN ?10 ELSE capture_file END,
          capture_offset = CASE WHEN capture_file IS NULL AND ?11 IS NOT NULL THEN ?11 ELSE capture_offset END
          WHERE id = ?1
        """
    static let closeFlowSQL = """
        UPDATE flows SET last_seen = max(last_seen, coalesce(?10, ?2)), bytes_out = ?3, bytes_in = ?4, packets_out = ?5,
          packets_in = ?6, closed_at = ?2, close_reason = ?7,
          capture_file = CASE WHEN capture_file IS NULL AND ?9 IS NOT NULL THEN ?8 ELSE capture_file END,
          capture_offset = CASE WHEN capture_file IS NULL AND ?9 IS NOT NULL THEN ?9 ELSE capture_offset END
          WHERE id = ?1
        """

    /// Inserts a flow (a reused id replaces the old row).
    public func insertFlow(_ f: FlowOpen) throws {
        let s = try hot(.insertFlow, StateStore.insertFlowSQL)
        s.bind(1, f.id)
        s.bind(2, Int64(f.proto))
        f.src.withBlob { s.bind(3, bytes: $0) }
        s.bind(4, Int64(f.srcPort))
        f.dst.withBlob { s.bind(5, bytes: $0) }
        s.bind(6, Int64(f.dstPort))
        s.bind(7, f.peer)
        s.bind(8, f.host)
        s.bind(9, f.at)
        s.bind(10, f.at)
        s.bind(11, f.verdict.name)
        s.bind(12, f.rule)
        bindCapture(s, 13, f.capture)
        bindDecision(s, 15, f.decision)
        try s.run()
    }

    /// Applies a flow update (no-op when the flow row is gone, e.g. pruned).
    public func updateFlow(_ u: FlowUpdate) throws {
        let s = try hot(.updateFlow, StateStore.updateFlowSQL)
        s.bind(1, u.id)
        s.bind(2, u.lastSeen)
        bindCounters(s, 3, u.counters)
        s.bind(9, u.host)
        bindCapture(s, 10, u.capture)
        try s.run()
    }

    /// Marks a flow closed with its final counters.
    public func closeFlow(_ c: FlowClose) throws {
        let s = try hot(.closeFlow, StateStore.closeFlowSQL)
        s.bind(1, c.id)
        s.bind(2, c.at)
        bindCounters(s, 3, c.counters)
        s.bind(7, c.reason)
        bindCapture(s, 8, c.capture)
        s.bind(10, c.lastSeen)
        try s.run()
    }

    private func bindCounters(_ s: Statement, _ first: Int32, _ c: FlowCounters) {
        s.bind(first, Int64(truncatingIfNeeded: c.bytesOut))
        s.bind(first + 1, Int64(truncatingIfNeeded: c.bytesIn))
        s.bind(first + 2, Int64(truncatingIfNeeded: c.packetsOut))
        s.bind(first + 3, Int64(truncatingIfNeeded: c.packetsIn))
    }

    /// A decision as the columns `rule_name`, `reason`, `tier`, `generation` (NULLs for none).
    private func bindDecision(_ s: Statement, _ first: Int32, _ d: DecidedRule?) {
        s.bind(first, d?.name)
        s.bind(first + 1, d?.reason)
        s.bind(first + 2, d?.tier)
        s.bind(first + 3, d.map { Int64(truncatingIfNeeded: $0.generation) })
    }

    /// A capture location as the two columns `capture_file`, `capture_offset` (NULL, NULL for none).
    private func bindCapture(_ s: Statement, _ first: Int32, _ c: CaptureLocation?) {
        s.bind(first, c.map { Int64($0.fileSequence) })
        s.bind(first + 1, c.map { Int64(truncatingIfNeeded: $0.offset) })
    }

    /// Flows active at or after `since` (by last_seen), newest first, optionally one peer's,
    /// optionally only blocked/rejected ones; at most `limit` rows.
    public func flows(since: Int64 = .min, peer: String? = nil, blockedOnly: Bool = false, limit: Int = 10_000) throws -> [Flow] {
        var sql = "SELECT \(StateStore.flowColumns) FROM flows WHERE last_seen >= ?1"
        if peer != nil { sql += " AND peer = ?2" }
        if blockedOnly { sql += " AND verdict IN ('block', 'reject')" }
        sql += " ORDER BY last_seen DESC, id DESC LIMIT ?3"
        let s = try connection.prepared(sql)
        defer { s.reset() }
        s.bind(1, since)
        if let peer { s.bind(2, peer) }
        s.bind(3, Int64(limit))
        var out: [Flow] = []
        while try s.step() { out.append(StateStore.flow(from: s)) }
        return out
    }

    /// The flow with the daemon's id `id`, or nil.
    public func flow(id: Int64) throws -> Flow? {
        let s = try connection.prepared("SELECT \(StateStore.flowColumns) FROM flows WHERE id = ?")
        defer { s.reset() }
        s.bind(1, id)
        return try s.step() ? StateStore.flow(from: s) : nil
    }

    /// The largest policy generation a stored decision names (0 when none): the daemon numbers its
    /// generations above it, so a generation names one policy across restarts too.
    public func maxDecisionGeneration() throws -> Int64 {
        try connection.scalarInt("""
            SELECT max(coalesce((SELECT max(generation) FROM flows), 0), coalesce((SELECT max(generation) FROM refusals), 0))
            """) ?? 0
    }

    /// The largest flow id stored (0 when none): the daemon starts its flow ids above it.
    public func maxFlowId() throws -> Int64 {
        try connection.scalarInt("SELECT max(id) FROM flows") ?? 0
    }

    static func flow(from s: Statement) -> Flow {
        let file = s.optionalInt64(16), offset = s.optionalInt64(17)
        return Flow(
            id: s.int64(0), proto: UInt8(truncatingIfNeeded: s.int64(1)),
            src: IPAddress(blob: s.blob(2)) ?? IPAddress(v4: 0), srcPort: UInt16(truncatingIfNeeded: s.int64(3)),
            dst: IPAddress(blob: s.blob(4)) ?? IPAddress(v4: 0), dstPort: UInt16(truncatingIfNeeded: s.int64(5)),
            peer: s.text(6), host: s.optionalText(7), firstSeen: s.int64(8), lastSeen: s.int64(9),
            counters: FlowCounters(bytesOut: UInt64(truncatingIfNeeded: s.int64(10)), bytesIn: UInt64(truncatingIfNeeded: s.int64(11)),
                                   packetsOut: UInt64(truncatingIfNeeded: s.int64(12)), packetsIn: UInt64(truncatingIfNeeded: s.int64(13))),
            verdict: Verdict(name: s.text(14)) ?? .pending, rule: s.optionalText(15),
            capture: file.flatMap { f in offset.map { CaptureLocation(fileSequence: UInt32(truncatingIfNeeded: f), offset: UInt64(truncatingIfNeeded: $0)) } },
            closedAt: s.optionalInt64(18), closeReason: s.optionalText(19),
            decision: s.optionalText(21).flatMap { reason in
                DecidedRule.stored(generation: s.optionalInt64(23) ?? 0, place: s.optionalText(15), name: s.optionalText(20),
                                   reason: reason, tier: s.optionalText(22))
            })
    }
}
