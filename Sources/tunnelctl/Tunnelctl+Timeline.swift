import Core
import Config
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Store

/// `tunnelctl timeline [--since 1h] [--peer NAME] [--json]` (tunnelctl(8)):
/// flows (opened, closed, blocked), refusals, sessions, audit sessions and markers from the
/// store, interleaved in time order (oldest first). `--since` defaults to 1h. With `--peer`,
/// flows, refusals and sessions are that peer's; markers and audit sessions are kept, since
/// they annotate the gateway as a whole.
extension Tunnelctl {
    static let runTimeline: Command.Body = { opts, console in
        let json = opts[.json]
        let peer = opts[.peer]
        let since = try opts[.since] ?? parseSince("1h", now: cliNow())
        let config = try cliConfig(opts)
        let scope = historyScope(opts)
        try opts.finish()
        let found = try historySource(config, local: scope.local, gateway: scope.gateway)
        if let peer { try checkHistoryPeer(peer, config, found) }
        guard let source = found else {
            if json {
                console.error("note: \(noHistoryYet(config))")
                console.print(try encodeJSON(TimelineJSON(since: since == .min ? nil : JSONTime(ms: since), truncated: false, events: [])))
            } else {
                console.print(noHistoryYet(config))
            }
            return .ok
        }
        // Audit sessions stay on the router that ran them (they are not shipped): shown when the
        // answer covers this router.
        let ownAudits = !source.shared || scope.gateway == nil || scope.gateway == config.interface.gatewayName
        var (events, truncated) = try CLIStore.call {
            try source.reader.readingOneSnapshot {
                try timelineEvents(source.reader, audits: ownAudits ? source.local : nil, since: since, peer: peer,
                                   gateway: scope.gateway)
            }
        }
        if events.contains(where: { $0.event == "flow-open" && $0.flow?.closedAt == nil }) {
            events = withOpenFlowCounts(events, LiveFlowCounts.ask(config, peer: peer))
        }
        if json {
            console.print(try encodeJSON(TimelineJSON(since: since == .min ? nil : JSONTime(ms: since), truncated: truncated, events: events)))
            return .ok
        }
        if events.isEmpty {
            console.print((since == .min ? "nothing in the store" : "nothing since \(dateTimeText(since))") + scopeText(source, scope.gateway))
            return .ok
        }
        var rows = [["TIME"] + (source.shared ? ["GATEWAY"] : []) + ["EVENT", "PEER", "WHAT"]]
        for e in events { rows.append([dateTimeText(e.at.ms)] + (source.shared ? [e.gateway ?? "-"] : []) + [e.event, e.peer ?? "-", e.summary]) }
        console.print(table(rows))
        if truncated { console.print("(only the newest \(timelineLimit) rows of a family are shown; narrow with --since or --peer)") }
        return .ok
    }

    /// Rows read per family.
    static let timelineLimit = 10_000

    /// The events at or after `since`, oldest first; ties keep a fixed family order, then id.
    /// The events at or after `since`, oldest first; ties keep a fixed family order, then
    /// gateway, then id. Audit sessions come from `audits` (this router's store) when given.
    /// `10-web.rules:4: web (gen 2, free)` or `the default (gen 2, free)`: what decided a stored
    /// flow, with why, as decided; a row that records no decision says so.
    static func decidedBy(_ f: Flow) -> String {
        guard let d = f.decision else { return "\(f.rule ?? "the default") (reason not recorded)" }
        guard let place = f.rule else { return "the default (\(generationText(d)))" }
        return "\(place): \(d.reason) (\(generationText(d)))"
    }

    static func timelineEvents(_ store: any HistoryReading, audits: StateStore?, since: Int64, peer: String?, gateway: String?) throws -> ([TimelineEvent], Bool) {
        let limit = timelineLimit
        var events: [(rank: Int, e: TimelineEvent)] = []
        var current: String? = nil  // the gateway of the row being added
        func add(_ rank: Int, _ event: String, _ at: Int64, _ id: Int64, _ peer: String?, _ summary: String, flow: FlowRow? = nil,
                 refusal: RefusalRow? = nil, session: SessionRow? = nil, audit: AuditSessionRow? = nil, marker: MarkerRow? = nil) {
            guard at >= since else { return }
            events.append((rank, TimelineEvent(event: event, at: JSONTime(ms: at), id: id, gateway: current, peer: peer, summary: summary,
                                               flow: flow, refusal: refusal, session: session, audit: audit, marker: marker)))
        }
        let flows = try store.historyFlows(since: since, peer: peer, gateway: gateway, blockedOnly: false, limit: limit)
        for g in flows {
            let f = g.row
            current = g.gateway
            let tuple = flowText(f)
            let row = FlowRow(f, gateway: g.gateway)
            let host = f.host.map { " (\($0))" } ?? ""
            if f.verdict == .block || f.verdict == .reject {
                add(2, "flow-block", f.firstSeen, f.id, f.peer, "\(tuple)\(host) \(f.verdict == .block ? "blocked" : "rejected") by \(decidedBy(f))", flow: row)
                continue
            }
            let verdict = f.verdict == .pending ? "verdict pending" : "allowed by \(decidedBy(f))"
            add(2, "flow-open", f.firstSeen, f.id, f.peer, "\(tuple)\(host) \(verdict)", flow: row)
            if let closed = f.closedAt {
                let bytes = "\(bytesText(f.counters.bytesOut)) out, \(bytesText(f.counters.bytesIn)) in"
                add(5, "flow-close", closed, f.id, f.peer, "\(tuple)\(host) closed\(f.closeReason.map { " (\($0))" } ?? ""), \(bytes)", flow: row)
            }
        }
        let refusals = try store.historyRefusals(since: since, peer: peer, gateway: gateway, limit: limit)
        for g in refusals {
            let r = g.row
            current = g.gateway
            let times = r.count == 1 ? "once" : "\(r.count) times, last \(dateTimeText(r.lastAt))"
            let what = r.kind == .session ? "session refused: \(r.reason)"
                : "\(r.flowKey)\(r.host.isEmpty ? "" : " host \(r.host)") refused by \(r.rule): \(r.reason)"
            add(3, "refusal", r.firstAt, r.id, r.peer, "\(what) (\(times))", refusal: RefusalRow(r, gateway: g.gateway))
        }
        let sessions = try store.historySessions(since: since, peer: peer, gateway: gateway, limit: limit)
        for g in sessions {
            let s = g.row
            current = g.gateway
            let row = SessionRow(s, gateway: g.gateway)
            add(1, "session-start", s.startedAt, s.id, s.peer, "session started", session: row)
            if let end = s.endedAt {
                let reason = s.endReason?.rawValue ?? "?"
                add(6, "session-end", end, s.id, s.peer,
                    "session ended (\(reason)) after \(remainingText((end - s.startedAt) / 1000)), rx \(bytesText(UInt64(max(0, s.rxBytes)))), tx \(bytesText(UInt64(max(0, s.txBytes))))",
                    session: row)
            }
        }
        current = nil
        for a in try audits?.audits(since: since) ?? [] {
            let row = AuditSessionRow(a)
            add(0, "audit-start", a.startedAt, a.id, nil, "audit session \(a.id) '\(a.label)' started", audit: row)
            if let end = a.endedAt { add(7, "audit-stop", end, a.id, nil, "audit session \(a.id) '\(a.label)' stopped", audit: row) }
        }
        let markers = try store.historyMarkers(since: since, gateway: gateway, limit: limit)
        for g in markers {
            let m = g.row
            current = g.gateway
            add(4, "marker", m.at, m.id, nil, "\(m.kind == .manual ? "" : "[daemon] ")\(m.label)\(m.detail.map { " (\(markerDetailText($0, m.kind)))" } ?? "")",
                marker: MarkerRow(m, gateway: g.gateway))
        }
        events.sort { a, b in
            if a.e.at.ms != b.e.at.ms { return a.e.at.ms < b.e.at.ms }
            if a.rank != b.rank { return a.rank < b.rank }
            if a.e.gateway != b.e.gateway { return (a.e.gateway ?? "") < (b.e.gateway ?? "") }
            return a.e.id < b.e.id
        }
        let truncated = flows.count == limit || refusals.count == limit || sessions.count == limit || markers.count == limit
        return (events.map(\.e), truncated)
    }

    /// A marker's detail as a person reads it. tunneld writes its facts as `key=value` words with
    /// times in epoch milliseconds (`allowed_until=1796526912659 reconnect_at=…`, kept so in the
    /// store and in --json); a time key (`…_until`, `…_at`) is shown as every other time here.
    /// An operator's own detail (`audit mark --detail`) is shown as written.
    static func markerDetailText(_ detail: String, _ kind: MarkerKind) -> String {
        guard kind != .manual else { return detail }
        return detail.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
            guard let eq = word.firstIndex(of: "=") else { return String(word) }
            let key = word[..<eq], value = word[word.index(after: eq)...]
            guard key.hasSuffix("_until") || key.hasSuffix("_at"), let ms = Int64(value), ms >= 1_000_000_000_000 else { return String(word) }
            return "\(key)=\(dateTimeText(ms))"
        }.joined(separator: " ")
    }

    static func protoName(_ p: UInt8) -> String { IPProtocol(rawValue: p).name }

    static func endpoint(_ a: IPAddress, _ port: UInt16, _ proto: UInt8) -> String {
        guard proto == 6 || proto == 17 else { return a.description }
        return a.isIPv6 ? "[\(a)]:\(port)" : "\(a):\(port)"
    }

    /// `tcp 10.99.0.2:40001 -> 192.168.1.5:443`.
    static func flowText(_ f: Flow) -> String {
        "\(protoName(f.proto)) \(endpoint(f.src, f.srcPort, f.proto)) -> \(endpoint(f.dst, f.dstPort, f.proto))"
    }
}
