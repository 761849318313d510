import Core

/// The history every gateway shipped, read back for `tunnelctl flows|refusals|sessions|timeline`
/// (`HistoryReading`): the local store's questions, every gateway's rows, each with its gateway.
extension PostgresSharedState {
    static let flowReadColumns = """
        gateway, id, proto, host(src_addr), src_port, host(dst_addr), dst_port, peer, host, first_seen, last_seen, \
        bytes_out, bytes_in, packets_out, packets_in, verdict, rule, closed_at, close_reason, \
        rule_name, reason, tier, generation
        """

    public func historyFlows(since: Int64, peer: String?, gateway: String?, blockedOnly: Bool, limit: Int) throws -> [Gatewayed<Flow>] {
        let r = try connection.execute("""
            SELECT \(Self.flowReadColumns) FROM tv_flows
            WHERE last_seen >= $1 AND ($2::text IS NULL OR peer = $2) AND ($3::text IS NULL OR gateway = $3)
                \(blockedOnly ? "AND verdict IN ('block', 'reject')" : "")
            ORDER BY last_seen DESC, gateway, id DESC LIMIT $4
            """, ["\(since)", peer, gateway, "\(max(0, limit))"], operation: "read flows")
        return r.rows.indices.map { i in
            Gatewayed(gateway: r.text(i, 0), row: Flow(
                id: r.int64(i, 1), proto: UInt8(truncatingIfNeeded: r.int64(i, 2)),
                src: r.text(i, 3).flatMap { IPAddress($0) } ?? IPAddress(v4: 0), srcPort: UInt16(truncatingIfNeeded: r.int64(i, 4)),
                dst: r.text(i, 5).flatMap { IPAddress($0) } ?? IPAddress(v4: 0), dstPort: UInt16(truncatingIfNeeded: r.int64(i, 6)),
                peer: r.text(i, 7) ?? "", host: r.text(i, 8), firstSeen: r.int64(i, 9), lastSeen: r.int64(i, 10),
                counters: FlowCounters(bytesOut: UInt64(truncatingIfNeeded: r.int64(i, 11)), bytesIn: UInt64(truncatingIfNeeded: r.int64(i, 12)),
                                       packetsOut: UInt64(truncatingIfNeeded: r.int64(i, 13)), packetsIn: UInt64(truncatingIfNeeded: r.int64(i, 14))),
                verdict: Verdict(name: r.text(i, 15) ?? "") ?? .pending, rule: r.text(i, 16), capture: nil,
                closedAt: r.text(i, 17).flatMap { Int64($0) }, closeReason: r.text(i, 18),
                decision: r.text(i, 20).flatMap { reason in
                    DecidedRule.stored(generation: r.int64(i, 22), place: r.text(i, 16), name: r.text(i, 19), reason: reason,
                                       tier: r.text(i, 21))
                }))
        }
    }

    public func historyRefusals(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Refusal>] {
        let r = try connection.execute("""
            SELECT gateway, id, kind, peer, rule, flow_key, reason, window_at, count, first_at, last_at, host,
                rule_name, tier, generation FROM tv_refusals
            WHERE last_at >= $1 AND ($2::text IS NULL OR peer = $2) AND ($3::text IS NULL OR gateway = $3)
            ORDER BY last_at DESC, gateway, id DESC LIMIT $4
            """, ["\(since)", peer, gateway, "\(max(0, limit))"], operation: "read refusals")
        return r.rows.indices.map { i in
            Gatewayed(gateway: r.text(i, 0), row: Refusal(
                id: r.int64(i, 1), kind: RefusalKind(rawValue: r.text(i, 2) ?? "") ?? .flow, peer: r.text(i, 3) ?? "",
                rule: r.text(i, 4) ?? "", flowKey: r.text(i, 5) ?? "", reason: r.text(i, 6) ?? "", window: r.int64(i, 7),
                count: r.int64(i, 8), firstAt: r.int64(i, 9), lastAt: r.int64(i, 10), host: r.text(i, 11) ?? "",
                decision: DecidedRule.stored(generation: r.int64(i, 14), place: r.text(i, 4) == "default" ? nil : r.text(i, 4),
                                             name: r.text(i, 12), reason: r.text(i, 6) ?? "", tier: r.text(i, 13))))
        }
    }

    public func historySessions(since: Int64, peer: String?, gateway: String?, limit: Int) throws -> [Gatewayed<Session>] {
        let r = try connection.execute("""
            SELECT gateway, id, peer, started_at, ended_at, end_reason, rx_bytes, tx_bytes FROM tv_sessions
            WHERE (ended_at IS NULL OR ended_at >= $1) AND ($2::text IS NULL OR peer = $2) AND ($3::text IS NULL OR gateway = $3)
            ORDER BY started_at DESC, gateway, id DESC LIMIT $4
            """, ["\(since)", peer, gateway, "\(max(0, limit))"], operation: "read sessions")
        return r.rows.indices.map { i in
            Gatewayed(gateway: r.text(i, 0), row: Session(
                id: r.int64(i, 1), peer: r.text(i, 2) ?? "", startedAt: r.int64(i, 3), endedAt: r.text(i, 4).flatMap { Int64($0) },
                endReason: r.text(i, 5).flatMap(SessionEndReason.init(rawValue:)), rxBytes: r.int64(i, 6), txBytes: r.int64(i, 7)))
        }
    }

    public func historyMarkers(since: Int64, gateway: String?, limit: Int) throws -> [Gatewayed<Marker>] {
        let r = try connection.execute("""
            SELECT gateway, id, at, label, kind, detail FROM tv_markers
            WHERE at >= $1 AND ($2::text IS NULL OR gateway = $2) ORDER BY at, gateway, id LIMIT $3
            """, ["\(since)", gateway, "\(max(0, limit))"], operation: "read markers")
        return r.rows.indices.map { i in
            Gatewayed(gateway: r.text(i, 0), row: Marker(
                id: r.int64(i, 1), at: r.int64(i, 2), label: r.text(i, 3) ?? "", kind: MarkerKind(rawValue: r.text(i, 4) ?? "") ?? .manual,
                auditSessionId: nil, detail: r.text(i, 5)))
        }
    }

    public func readingOneSnapshot<T>(_ body: () throws -> T) throws -> T {
        try connection.transaction("read history", begin: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", body)
    }
}
