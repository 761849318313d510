/// The history journal for a shared store (schema v5, issue 19; docs/store.md "`ship_queue`").
///
/// While a target is set, triggers queue every insert or update of a flow, session, refusal or
/// marker row as (family, row id) in `seq` order, whoever writes it (the daemon's writer,
/// `tunnelctl mark`). The daemon's sync thread reads a chunk (`journalChunk`), ships the rows'
/// current values to the shared store in one transaction (an upsert keyed by gateway and id,
/// so shipping a chunk twice after a crash changes nothing), then deletes what it covered
/// (`journalShipped`). The journal lives in the same file as the rows, so nothing the store
/// kept is lost while the shared store is away; a row pruned locally before it shipped is
/// counted (`JournalChunk.missing`), never silently skipped.
public struct JournalChunk: Sendable {
    /// The rows, as they are now, under the target's gateway name.
    public var batch: HistoryBatch
    /// The last queue position covered (0 when the journal is empty).
    public var through: Int64
    /// Queue entries covered (one row changed several times is shipped once).
    public var changes: Int
    /// Entries whose row is no longer in the store (pruned before it shipped).
    public var missing: Int
}

/// The row families of `ship_queue.family`.
enum JournalFamily: Int64, CaseIterable {
    case flows = 0, sessions = 1, refusals = 2, markers = 3
}

extension StateStore {
    /// Starts journalling under `gateway` (nil: stops, and drops what was queued: the store is
    /// local again). Returns the queue entries dropped.
    @discardableResult
    public func setJournalTarget(gateway: String?, at: Int64) throws -> Int64 {
        try connection.transaction {
            guard let gateway else {
                let depth = try journalDepth()
                try connection.execute("DELETE FROM ship_target")
                try connection.execute("DELETE FROM ship_queue")
                return depth
            }
            let s = try connection.prepared("""
                INSERT INTO ship_target (id, gateway, since) VALUES (1, ?1, ?2)
                ON CONFLICT (id) DO UPDATE SET gateway = excluded.gateway
                """)
            defer { s.reset() }
            s.bind(1, gateway)
            s.bind(2, at)
            _ = try s.step()
            return 0
        }
    }

    /// The gateway the journal ships under, or nil when none is set.
    public func journalTarget() throws -> String? {
        let s = try connection.prepared("SELECT gateway FROM ship_target WHERE id = 1")
        defer { s.reset() }
        return try s.step() ? s.text(0) : nil
    }

    /// Queue entries not shipped yet. Entries are only ever deleted as a prefix (`journalShipped`),
    /// so this is exact without counting the rows.
    public func journalDepth() throws -> Int64 {
        let s = try connection.prepared("SELECT min(seq), max(seq) FROM ship_queue")
        defer { s.reset() }
        guard try s.step(), let lo = s.optionalInt64(0), let hi = s.optionalInt64(1) else { return 0 }
        return hi - lo + 1
    }

    /// The oldest `limit` queue entries with their rows' current values. Empty (`through` 0)
    /// when nothing is queued or no target is set.
    public func journalChunk(limit: Int) throws -> JournalChunk {
        guard let gateway = try journalTarget() else {
            return JournalChunk(batch: HistoryBatch(gateway: ""), through: 0, changes: 0, missing: 0)
        }
        let q = try connection.prepared("SELECT seq, family, row_id FROM ship_queue ORDER BY seq LIMIT ?1")
        q.bind(1, Int64(max(1, limit)))
        var through: Int64 = 0
        var changes = 0
        // Each (family, id) once, in the order of its last change.
        var lastSeq: [JournalFamily: [Int64: Int64]] = [:]
        while try q.step() {
            through = q.int64(0)
            changes += 1
            guard let family = JournalFamily(rawValue: q.int64(1)) else { continue }
            lastSeq[family, default: [:]][q.int64(2)] = through
        }
        q.reset()
        var batch = HistoryBatch(gateway: gateway)
        var missing = 0
        for family in JournalFamily.allCases {
            guard let ids = lastSeq[family] else { continue }
            let ordered = ids.sorted { $0.value < $1.value }.map(\.key)
            switch family {
            case .flows:
                batch.flows = try rows(ordered, "SELECT \(StateStore.flowColumns) FROM flows WHERE id = ?1", StateStore.flow, &missing)
            case .sessions:
                batch.sessions = try rows(ordered, "SELECT \(StateStore.sessionColumns) FROM sessions WHERE id = ?1", StateStore.session, &missing)
            case .refusals:
                batch.refusals = try rows(ordered, "SELECT \(StateStore.refusalColumns) FROM refusals WHERE id = ?1", StateStore.refusal, &missing)
            case .markers:
                batch.markers = try rows(ordered, "SELECT \(StateStore.markerColumns) FROM markers WHERE id = ?1", StateStore.marker, &missing)
            }
        }
        return JournalChunk(batch: batch, through: through, changes: changes, missing: missing)
    }

    private func rows<T>(_ ids: [Int64], _ sql: String, _ decode: (Statement) -> T, _ missing: inout Int) throws -> [T] {
        let s = try connection.prepared(sql)
        var out: [T] = []
        out.reserveCapacity(ids.count)
        for id in ids {
            s.bind(1, id)
            if try s.step() { out.append(decode(s)) } else { missing += 1 }
            s.reset()
        }
        return out
    }

    /// The shared store took every entry up to `through`: they leave the journal.
    public func journalShipped(through: Int64) throws {
        guard through > 0 else { return }
        let s = try connection.prepared("DELETE FROM ship_queue WHERE seq <= ?1")
        defer { s.reset() }
        s.bind(1, through)
        try connection.transaction { _ = try s.step() }
    }
}
