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

/// `tunnelctl refusals [--since D] [--peer NAME]` and `tunnelctl flows [--since D] [--peer NAME]
/// [--blocked]`: the store's coalesced refusals and flow rows, newest first. They never need the
/// daemon.
extension Tunnelctl {
    static let runRefusals: Command.Body = { opts, console in
        let json = opts[.json]
        let config = try cliConfig(opts)
        let since = opts[.since] ?? .min
        let peer = opts[.peer]
        let scope = historyScope(opts)
        try opts.finish()
        let store = try historySource(config, local: scope.local, gateway: scope.gateway)
        if let peer { try checkHistoryPeer(peer, config, store) }
        let rows = try CLIStore.call { try store?.reader.historyRefusals(since: since, peer: peer, gateway: scope.gateway, limit: 10_000) ?? [] }
        if json {
            if store == nil { console.error("note: \(noHistoryYet(config))") }
            console.print(try encodeJSON(rows.map { RefusalRow($0.row, gateway: $0.gateway) }))
            return .ok
        }
        if store == nil {
            console.print(noHistoryYet(config))
            return .ok
        }
        if rows.isEmpty {
            console.print("no refusals\(peer.map { " of \($0)" } ?? "")\(scopeText(store, scope.gateway))\(since == .min ? "" : " since \(dateTimeText(since))")")
            return .ok
        }
        let shared = store?.shared == true
        var table = [["LAST"] + (shared ? ["GATEWAY"] : []) + ["PEER", "KIND", "WHAT", "RULE", "COUNT", "FIRST", "REASON"]]
        for r in rows {
            // A session row of window 0 is a refusal whatever the window (disabled, expired).
            let what = r.kind == .session
                ? (r.window == 0 ? "refused (\(r.reason)), not a pause" : "pause after window ending \(clockText(r.window))")
                : r.flowKey + (r.host.isEmpty ? "" : " host \(r.host)")
            table.append([dateTimeText(r.lastAt)] + (shared ? [r.gateway ?? "-"] : []) + [r.peer, r.kind.rawValue, what, r.rule.isEmpty ? "-" : r.rule, String(r.count),
                          dateTimeText(r.firstAt), r.reason])
        }
        console.print(Tunnelctl.table(table))
        return .ok
    }

    static let runFlows: Command.Body = { opts, console in
        let json = opts[.json]
        let blocked = opts[.blocked]
        let config = try cliConfig(opts)
        let since = opts[.since] ?? .min
        let peer = opts[.peer]
        let scope = historyScope(opts)
        try opts.finish()
        let store = try historySource(config, local: scope.local, gateway: scope.gateway)
        if let peer { try checkHistoryPeer(peer, config, store) }
        var rows = try CLIStore.call {
            try store?.reader.historyFlows(since: since, peer: peer, gateway: scope.gateway, blockedOnly: blocked, limit: 10_000) ?? []
        }
        // Open flows: the counts tunneld has now (the store's are as of the last record).
        let counts = LiveFlowCounts.ask(config, peer: peer)
        var isLive = Set<Int>()  // indices of rows
        for i in rows.indices where rows[i].row.closedAt == nil {
            let (now, live) = counts.current(rows[i].row, rowGateway: rows[i].gateway)
            rows[i].row = now
            if live { isLive.insert(i) }
        }
        if json {
            if store == nil { console.error("note: \(noHistoryYet(config))") }
            console.print(try encodeJSON(rows.map { FlowRow($0.row, gateway: $0.gateway) }))
            return .ok
        }
        if store == nil {
            console.print(noHistoryYet(config))
            return .ok
        }
        if rows.isEmpty {
            console.print("no \(blocked ? "blocked " : "")flows\(peer.map { " of \($0)" } ?? "")\(scopeText(store, scope.gateway))\(since == .min ? "" : " since \(dateTimeText(since))")")
            return .ok
        }
        let shared = store?.shared == true
        // An unclosed row is "live" when this router's tunneld has it in its table now (counts
        // from there); otherwise it was open when last recorded, which is all the store knows.
        var stale = false
        var table = [["ID"] + (shared ? ["GATEWAY"] : []) + ["PEER", "FLOW", "HOST", "VERDICT", "RULE", "OUT", "IN", "FIRST", "LAST", "STATE", "REASON"]]
        for (i, f) in rows.enumerated() {
            let c = f.counters
            table.append([String(f.id)] + (shared ? [f.gateway ?? "-"] : []) + [f.peer, flowText(f.row), f.host ?? "-", f.verdict.name, f.rule ?? "default",
                          "\(c.packetsOut)p/\(bytesText(c.bytesOut))", "\(c.packetsIn)p/\(bytesText(c.bytesIn))",
                          dateTimeText(f.firstSeen), clockText(f.lastSeen), f.closedAt == nil ? (isLive.contains(i) ? "live" : "open") : (f.closeReason ?? "closed"),
                          decisionText(f.row)])
            if f.closedAt == nil && !isLive.contains(i) { stale = true }
        }
        console.print(Tunnelctl.table(table))
        if stale { console.print("open: packets and bytes as of the flow's last record (LAST): \(counts.staleReason)") }
        return .ok
    }

    /// Why a stored flow got its verdict, as decided: the reason, with the generation and tier
    /// (`no outgoing mail (gen 3, free)`); `not recorded` for a row an older tunneld stored, `-`
    /// while the verdict is pending.
    static func decisionText(_ f: Flow) -> String {
        guard let d = f.decision else { return f.verdict == .pending ? "-" : "not recorded" }
        return "\(d.reason) (\(generationText(d)))"
    }

    /// `gen 3, free`: the generation and tier of a decision.
    static func generationText(_ d: DecidedRule) -> String {
        "gen \(d.generation)\(d.tier.map { ", \($0)" } ?? "")"
    }

    /// " on gw-b" / " in the shared store" for an empty answer from a shared store.
    static func scopeText(_ store: HistorySource?, _ gateway: String?) -> String {
        guard store?.shared == true else { return "" }
        return gateway.map { " on \($0)" } ?? " in the shared store"
    }
}
