import Core
import Control
import Foundation
import Store

/// `tunnelctl timeline [--since 1h] [--peer NAME] [--json]` (DESIGN.md §9, issue 6 Deliver 2):
/// flows (opened, closed, blocked), refusals, sessions, audit sessions and markers from the
/// store, interleaved in time order (oldest first). `--since` defaults to 1h. With `--peer`,
/// flows, refusals and sessions are that peer's; markers and audit sessions are kept, since
/// they annotate the gateway as a whole.
extension Tunnelctl {
    static let runTimeline: Command.Body = { args, console in
        let json = args.flag("--json")
        let sinceText = try args.option("--since") ?? "1h"
        let peer = try args.option("--peer")
        let since = try parseSince(sinceText, now: cliNow())
        let (history, config) = try openHistory(&args)
        try args.finish()
        guard let store = history else {
            if json {
                console.error("note: \(noHistoryYet(config))")
                console.print(try encodeJSON(TimelineJSON(since: since == .min ? nil : isoText(since), truncated: false, events: [])))
            } else {
                console.print(noHistoryYet(config))
            }
            return .ok
        }
        let (events, truncated) = try storeCall { try store.connection.read { try timelineEvents(store, since: since, peer: peer) } }
        if json {
            console.print(try encodeJSON(TimelineJSON(since: since == .min ? nil : isoText(since), truncated: truncated, events: events)))
            return .ok
        }
        if events.isEmpty {
            console.print(since == .min ? "nothing in the store" : "nothing since \(dateTimeText(since))")
            return .ok
        }
        var rows = [["TIME", "EVENT", "PEER", "WHAT"]]
        for e in events { rows.append([dateTimeText(e.atMs), e.event, e.peer ?? "-", e.summary]) }
        console.print(table(rows))
        if truncated { console.print("(only the newest \(timelineLimit) rows of a family are shown; narrow with --since or --peer)") }
        return .ok
    }

    /// Rows read per family.
    static let timelineLimit = 10_000

    /// One line of the timeline.
    struct TimelineEvent: Encodable, Equatable {
        /// `flow-open`, `flow-close`, `flow-block`, `refusal`, `session-start`, `session-end`,
        /// `audit-start`, `audit-stop`, `marker`.
        var event: String
        var at: String
        var atMs: Int64
        /// Row id in its table (flows: the daemon's flow id).
        var id: Int64
        var peer: String?
        /// The line a person reads.
        var summary: String
        /// The row's values, by name (documented in docs/audit.md); absent when none.
        var fields: [String: String]?
    }

    struct TimelineJSON: Encodable {
        var since: String?
        var truncated: Bool
        var events: [TimelineEvent]
    }

    /// The events at or after `since`, oldest first; ties keep a fixed family order, then id.
    static func timelineEvents(_ store: StateStore, since: Int64, peer: String?) throws -> ([TimelineEvent], Bool) {
        let limit = timelineLimit
        var events: [(rank: Int, e: TimelineEvent)] = []
        func add(_ rank: Int, _ event: String, _ at: Int64, _ id: Int64, _ peer: String?, _ summary: String, _ fields: [String: String]) {
            guard at >= since else { return }
            events.append((rank, TimelineEvent(event: event, at: isoText(at), atMs: at, id: id, peer: peer, summary: summary,
                                               fields: fields.isEmpty ? nil : fields)))
        }
        let flows = try store.flows(since: since, peer: peer, limit: limit)
        for f in flows {
            let tuple = flowText(f)
            var fields = ["proto": protoName(f.proto), "src": endpoint(f.src, f.srcPort, f.proto), "dst": endpoint(f.dst, f.dstPort, f.proto),
                          "verdict": f.verdict.name, "bytesOut": String(f.counters.bytesOut), "bytesIn": String(f.counters.bytesIn)]
            if let h = f.host { fields["host"] = h }
            if let r = f.rule { fields["rule"] = r }
            let host = f.host.map { " (\($0))" } ?? ""
            if f.verdict == .block || f.verdict == .reject {
                add(2, "flow-block", f.firstSeen, f.id, f.peer, "\(tuple)\(host) \(f.verdict == .block ? "blocked" : "rejected") by \(f.rule ?? "the default")", fields)
                continue
            }
            let verdict = f.verdict == .pending ? "verdict pending" : "allowed by \(f.rule ?? "the default")"
            add(2, "flow-open", f.firstSeen, f.id, f.peer, "\(tuple)\(host) \(verdict)", fields)
            if let closed = f.closedAt {
                var cf = fields
                cf["closeReason"] = f.closeReason ?? ""
                let bytes = "\(bytesText(f.counters.bytesOut)) out, \(bytesText(f.counters.bytesIn)) in"
                add(5, "flow-close", closed, f.id, f.peer, "\(tuple)\(host) closed (\(f.closeReason ?? "?")), \(bytes)", cf)
            }
        }
        let refusals = try store.refusals(since: since, peer: peer, limit: limit)
        for r in refusals {
            let times = r.count == 1 ? "once" : "\(r.count) times, last \(dateTimeText(r.lastAt))"
            let what = r.kind == .session ? "session refused: \(r.reason)" : "\(r.flowKey) refused by \(r.rule): \(r.reason)"
            add(3, "refusal", r.firstAt, r.id, r.peer, "\(what) (\(times))",
                ["kind": r.kind.rawValue, "rule": r.rule, "flowKey": r.flowKey, "reason": r.reason, "count": String(r.count),
                 "lastAt": isoText(r.lastAt)])
        }
        let sessions = try store.sessions(since: since, peer: peer, limit: limit)
        for s in sessions {
            add(1, "session-start", s.startedAt, s.id, s.peer, "session started", [:])
            if let end = s.endedAt {
                let reason = s.endReason?.rawValue ?? "?"
                add(6, "session-end", end, s.id, s.peer,
                    "session ended (\(reason)) after \(remainingText((end - s.startedAt) / 1000)), rx \(bytesText(UInt64(max(0, s.rxBytes)))), tx \(bytesText(UInt64(max(0, s.txBytes))))",
                    ["endReason": reason, "rxBytes": String(s.rxBytes), "txBytes": String(s.txBytes)])
            }
        }
        let audits = try store.audits(since: since)
        for a in audits {
            add(0, "audit-start", a.startedAt, a.id, nil, "audit session \(a.id) '\(a.label)' started", ["label": a.label])
            if let end = a.endedAt { add(7, "audit-stop", end, a.id, nil, "audit session \(a.id) '\(a.label)' stopped", ["label": a.label]) }
        }
        let markers = try store.markers(since: since, limit: limit)
        for m in markers {
            var fields = ["label": m.label, "kind": m.kind.rawValue]
            if let d = m.detail { fields["detail"] = d }
            if let a = m.auditSessionId { fields["auditSessionId"] = String(a) }
            add(4, "marker", m.at, m.id, nil, "\(m.kind == .manual ? "" : "[daemon] ")\(m.label)\(m.detail.map { " (\($0))" } ?? "")", fields)
        }
        events.sort { a, b in
            if a.e.atMs != b.e.atMs { return a.e.atMs < b.e.atMs }
            if a.rank != b.rank { return a.rank < b.rank }
            return a.e.id < b.e.id
        }
        let truncated = flows.count == limit || refusals.count == limit || sessions.count == limit || markers.count == limit
        return (events.map(\.e), truncated)
    }

    static func protoName(_ p: UInt8) -> String {
        switch p {
        case 1: return "icmp"
        case 6: return "tcp"
        case 17: return "udp"
        case 58: return "icmpv6"
        default: return "proto-\(p)"
        }
    }

    static func endpoint(_ a: IPAddress, _ port: UInt16, _ proto: UInt8) -> String {
        guard proto == 6 || proto == 17 else { return a.description }
        return a.isIPv6 ? "[\(a)]:\(port)" : "\(a):\(port)"
    }

    /// `tcp 10.99.0.2:40001 -> 192.168.1.5:443`.
    static func flowText(_ f: Flow) -> String {
        "\(protoName(f.proto)) \(endpoint(f.src, f.srcPort, f.proto)) -> \(endpoint(f.dst, f.dstPort, f.proto))"
    }
}
