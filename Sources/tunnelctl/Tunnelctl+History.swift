import Core
import Control
import Foundation
import Store

/// `tunnelctl refusals [--since D] [--peer NAME]` and `tunnelctl flows [--since D] [--peer NAME]
/// [--blocked]`: the store's coalesced refusals and flow rows, newest first. They never need the
/// daemon.
extension Tunnelctl {
    static let runRefusals: Command.Body = { args, console in
        let json = args.flag("--json")
        let config = try cliConfig(&args)
        let now = cliNow()
        let since = try sinceOption(&args, now: now)
        let peer = try args.option("--peer")
        try args.finish()
        if let peer { _ = try configuredPeer(peer, config) }
        let store = try readStore(config)
        let rows = try store?.refusals(since: since, peer: peer) ?? []
        if json {
            if store == nil { console.error("note: \(noHistoryYet(config))") }
            console.print(try encodeJSON(rows.map(RefusalRow.init)))
            return .ok
        }
        if store == nil {
            console.print(noHistoryYet(config))
            return .ok
        }
        if rows.isEmpty {
            console.print("no refusals\(peer.map { " of \($0)" } ?? "")\(since == .min ? "" : " since \(dateTimeText(since))")")
            return .ok
        }
        var table = [["LAST", "PEER", "KIND", "WHAT", "RULE", "COUNT", "FIRST", "REASON"]]
        for r in rows {
            let what = r.kind == .session ? "pause after window ending \(clockText(r.window))" : r.flowKey
            table.append([dateTimeText(r.lastAt), r.peer, r.kind.rawValue, what, r.rule.isEmpty ? "-" : r.rule, String(r.count),
                          dateTimeText(r.firstAt), r.reason])
        }
        console.print(Tunnelctl.table(table))
        return .ok
    }

    static let runFlows: Command.Body = { args, console in
        let json = args.flag("--json")
        let blocked = args.flag("--blocked")
        let config = try cliConfig(&args)
        let now = cliNow()
        let since = try sinceOption(&args, now: now)
        let peer = try args.option("--peer")
        try args.finish()
        if let peer { _ = try configuredPeer(peer, config) }
        let store = try readStore(config)
        let rows = try store?.flows(since: since, peer: peer, blockedOnly: blocked) ?? []
        if json {
            if store == nil { console.error("note: \(noHistoryYet(config))") }
            console.print(try encodeJSON(rows.map(FlowRow.init)))
            return .ok
        }
        if store == nil {
            console.print(noHistoryYet(config))
            return .ok
        }
        if rows.isEmpty {
            console.print("no \(blocked ? "blocked " : "")flows\(peer.map { " of \($0)" } ?? "")\(since == .min ? "" : " since \(dateTimeText(since))")")
            return .ok
        }
        var table = [["ID", "PEER", "FLOW", "VERDICT", "RULE", "OUT", "IN", "FIRST", "LAST", "STATE"]]
        for f in rows {
            let c = f.counters
            table.append([String(f.id), f.peer, flowText(f), f.verdict.name, f.rule ?? "default",
                          "\(c.packetsOut)p/\(bytesText(c.bytesOut))", "\(c.packetsIn)p/\(bytesText(c.bytesIn))",
                          dateTimeText(f.firstSeen), clockText(f.lastSeen), f.closedAt == nil ? "live" : (f.closeReason ?? "closed")])
        }
        console.print(Tunnelctl.table(table))
        return .ok
    }
}

/// `refusals --json` row.
struct RefusalRow: Encodable {
    var kind: String
    var peer: String
    var rule: String?
    var flowKey: String?
    var reason: String
    /// Session: the window's end; flow: start of the one-hour period (ISO-8601 UTC).
    var window: String
    var count: Int64
    var firstAt: String
    var lastAt: String
    init(_ r: Refusal) {
        kind = r.kind.rawValue
        peer = r.peer
        rule = r.rule.isEmpty ? nil : r.rule
        flowKey = r.flowKey.isEmpty ? nil : r.flowKey
        reason = r.reason
        window = Tunnelctl.isoText(r.window)
        count = r.count
        firstAt = Tunnelctl.isoText(r.firstAt)
        lastAt = Tunnelctl.isoText(r.lastAt)
    }
    enum CodingKeys: String, CodingKey { case kind, peer, rule, flowKey, reason, window, count, firstAt, lastAt }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(peer, forKey: .peer)
        try c.encode(rule, forKey: .rule)
        try c.encode(flowKey, forKey: .flowKey)
        try c.encode(reason, forKey: .reason)
        try c.encode(window, forKey: .window)
        try c.encode(count, forKey: .count)
        try c.encode(firstAt, forKey: .firstAt)
        try c.encode(lastAt, forKey: .lastAt)
    }
}

/// `flows --json` row.
struct FlowRow: Encodable {
    var id: Int64
    var peer: String
    var proto: UInt8
    var src: String
    var srcPort: UInt16
    var dst: String
    var dstPort: UInt16
    var host: String?
    var verdict: String
    var rule: String?
    var firstSeen: String
    var lastSeen: String
    var bytesOut: UInt64
    var bytesIn: UInt64
    var packetsOut: UInt64
    var packetsIn: UInt64
    var closedAt: String?
    var closeReason: String?
    init(_ f: Flow) {
        id = f.id
        peer = f.peer
        proto = f.proto
        src = f.src.description
        srcPort = f.srcPort
        dst = f.dst.description
        dstPort = f.dstPort
        host = f.host
        verdict = f.verdict.name
        rule = f.rule
        firstSeen = Tunnelctl.isoText(f.firstSeen)
        lastSeen = Tunnelctl.isoText(f.lastSeen)
        bytesOut = f.counters.bytesOut
        bytesIn = f.counters.bytesIn
        packetsOut = f.counters.packetsOut
        packetsIn = f.counters.packetsIn
        closedAt = f.closedAt.map(Tunnelctl.isoText)
        closeReason = f.closeReason
    }
    enum CodingKeys: String, CodingKey {
        case id, peer, proto, src, srcPort, dst, dstPort, host, verdict, rule, firstSeen, lastSeen, bytesOut, bytesIn,
             packetsOut, packetsIn, closedAt, closeReason
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(peer, forKey: .peer)
        try c.encode(proto, forKey: .proto)
        try c.encode(src, forKey: .src)
        try c.encode(srcPort, forKey: .srcPort)
        try c.encode(dst, forKey: .dst)
        try c.encode(dstPort, forKey: .dstPort)
        try c.encode(host, forKey: .host)
        try c.encode(verdict, forKey: .verdict)
        try c.encode(rule, forKey: .rule)
        try c.encode(firstSeen, forKey: .firstSeen)
        try c.encode(lastSeen, forKey: .lastSeen)
        try c.encode(bytesOut, forKey: .bytesOut)
        try c.encode(bytesIn, forKey: .bytesIn)
        try c.encode(packetsOut, forKey: .packetsOut)
        try c.encode(packetsIn, forKey: .packetsIn)
        try c.encode(closedAt, forKey: .closedAt)
        try c.encode(closeReason, forKey: .closeReason)
    }
}
