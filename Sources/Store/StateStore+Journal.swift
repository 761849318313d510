/// The history journal for a shared store (schema v5; docs/store.md "`ship_queue`").
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
    /// when nothing is queued or no target is set. Each row comes once, rows inserted within the
    /// chunk first (`HistoryBatch.new`); a chunk is shipped as one transaction, so the order of
    /// rows inside it does not matter, and chunks go in queue order.
    public func journalChunk(limit: Int) throws -> JournalChunk {
        guard let gateway = try journalTarget() else {
            return JournalChunk(batch: HistoryBatch(gateway: ""), through: 0, changes: 0, missing: 0)
        }
        let q = try connection.prepared("SELECT seq, family, row_id, inserted FROM ship_queue ORDER BY seq LIMIT ?1")
        q.bind(1, Int64(max(1, limit)))
        var first: Int64 = 0, through: Int64 = 0
        var changes = 0
        // Per family: each row id, and whether the chunk holds its insert.
        var ids: [JournalFamily: [Int64: Bool]] = [:]
        while try q.step() {
            through = q.int64(0)
            if first == 0 { first = through }
            changes += 1
            guard let family = JournalFamily(rawValue: q.int64(1)) else { continue }
            let id = q.int64(2), inserted = q.int64(3) != 0
            ids[family, default: [:]][id] = (ids[family]?[id] ?? false) || inserted
        }
        q.reset()
        var batch = HistoryBatch(gateway: gateway)
        var missing = 0
        for family in JournalFamily.allCases {
            guard let rows = ids[family] else { continue }
            let table: String, columns: String
            switch family {
            case .flows: (table, columns) = ("flows", StateStore.flowColumns)
            case .sessions: (table, columns) = ("sessions", StateStore.sessionColumns)
            case .refusals: (table, columns) = ("refusals", StateStore.refusalColumns)
            case .markers: (table, columns) = ("markers", StateStore.markerColumns)
            }
            let s = try connection.prepared("""
                SELECT \(columns) FROM \(table) WHERE id IN
                    (SELECT row_id FROM ship_queue WHERE seq BETWEEN ?1 AND ?2 AND family = ?3)
                """)
            s.bind(1, first)
            s.bind(2, through)
            s.bind(3, family.rawValue)
            var found = 0
            func collect<T>(_ decode: (Statement) -> T, _ id: (T) -> Int64) throws -> ([T], Int64) {
                var fresh: [T] = [], changed: [T] = []
                while try s.step() {
                    let row = decode(s)
                    if rows[id(row)] == true { fresh.append(row) } else { changed.append(row) }
                }
                found = fresh.count + changed.count
                return (fresh + changed, Int64(fresh.count))
            }
            defer { s.reset() }
            switch family {
            case .flows: (batch.flows, batch.new.flows) = try collect(StateStore.flow, \.id)
            case .sessions: (batch.sessions, batch.new.sessions) = try collect(StateStore.session, \.id)
            case .refusals: (batch.refusals, batch.new.refusals) = try collect(StateStore.refusal, \.id)
            case .markers: (batch.markers, batch.new.markers) = try collect(StateStore.marker, \.id)
            }
            missing += rows.count - found
        }
        return JournalChunk(batch: batch, through: through, changes: changes, missing: missing)
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
