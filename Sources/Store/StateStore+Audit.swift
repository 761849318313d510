import Core
/// Audit sessions and markers: written by tunnelctl directly and by the daemon.
extension StateStore {
    /// Adds a marker, attached to the audit session open at that moment (if any); returns it.
    @discardableResult
    public func addMarker(_ m: MarkerInput) throws -> Marker {
        try connection.transaction {
            let s = try connection.prepared("""
                INSERT INTO markers (at, label, kind, audit_session_id, detail)
                VALUES (?1, ?2, ?3, (SELECT id FROM audit_sessions WHERE ended_at IS NULL), ?4)
                RETURNING id, audit_session_id
                """)
            defer { s.reset() }
            s.bind(1, m.at)
            s.bind(2, m.label)
            s.bind(3, m.kind.rawValue)
            s.bind(4, m.detail)
            guard try s.step() else {
                throw StoreError.sqlite(path: connection.path, operation: "insert marker", code: 0, message: "no row returned")
            }
            let marker = Marker(id: s.int64(0), at: m.at, label: m.label, kind: m.kind, auditSessionId: s.optionalInt64(1), detail: m.detail)
            while try s.step() {}
            return marker
        }
    }

    /// Markers at or after `since`, oldest first, optionally only those of one audit session.
    public func markers(since: Int64 = .min, auditSessionId: Int64? = nil, limit: Int = 10_000) throws -> [Marker] {
        var sql = "SELECT \(StateStore.markerColumns) FROM markers WHERE at >= ?1"
        if auditSessionId != nil { sql += " AND audit_session_id = ?2" }
        sql += " ORDER BY at, id LIMIT ?3"
        let s = try connection.prepared(sql)
        defer { s.reset() }
        s.bind(1, since)
        if let auditSessionId { s.bind(2, auditSessionId) }
        s.bind(3, Int64(limit))
        var out: [Marker] = []
        while try s.step() { out.append(StateStore.marker(from: s)) }
        return out
    }

    static let markerColumns = "id, at, label, kind, audit_session_id, detail"

    static func marker(from s: Statement) -> Marker {
        Marker(id: s.int64(0), at: s.int64(1), label: s.text(2), kind: MarkerKind(rawValue: s.text(3)) ?? .manual,
               auditSessionId: s.optionalInt64(4), detail: s.optionalText(5))
    }

    /// Opens an audit session. Throws `.auditAlreadyOpen(open)` when one is open.
    @discardableResult
    public func startAudit(label: String, at: Int64) throws -> AuditSession {
        try connection.transaction {
            if let open = try openAudit() { throw StoreError.auditAlreadyOpen(open) }
            let s = try connection.prepared("INSERT INTO audit_sessions (label, started_at) VALUES (?, ?)")
            s.bind(1, label)
            s.bind(2, at)
            try s.run()
            return AuditSession(id: connection.lastInsertRowid, label: label, startedAt: at, endedAt: nil)
        }
    }

    /// Closes the open audit session at `at` (never before its start); throws `.noOpenAudit`.
    @discardableResult
    public func stopAudit(at: Int64) throws -> AuditSession {
        try connection.transaction {
            guard var open = try openAudit() else { throw StoreError.noOpenAudit }
            let end = max(open.startedAt, at)
            let s = try connection.prepared("UPDATE audit_sessions SET ended_at = ? WHERE id = ?")
            s.bind(1, end)
            s.bind(2, open.id)
            try s.run()
            open.endedAt = end
            return open
        }
    }

    /// The open audit session, or nil.
    public func openAudit() throws -> AuditSession? {
        try auditRows("SELECT id, label, started_at, ended_at FROM audit_sessions WHERE ended_at IS NULL LIMIT 1", .min).first
    }

    /// Audit sessions open at or after `since`, oldest first.
    public func audits(since: Int64 = .min) throws -> [AuditSession] {
        try auditRows("""
            SELECT id, label, started_at, ended_at FROM audit_sessions
            WHERE ended_at IS NULL OR ended_at >= ?1 ORDER BY started_at, id
            """, since)
    }

    private func auditRows(_ sql: String, _ since: Int64) throws -> [AuditSession] {
        let s = try connection.prepared(sql)
        defer { s.reset() }
        if sql.contains("?1") { s.bind(1, since) }
        var out: [AuditSession] = []
        while try s.step() {
            out.append(AuditSession(id: s.int64(0), label: s.text(1), startedAt: s.int64(2), endedAt: s.optionalInt64(3)))
        }
        return out
    }
}
