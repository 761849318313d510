import Core
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Packet
import Policy
import Store

/// `tunnelctl explain 'FLOW'`: the deciding rule (as `policy test`, with the peer and its tier
/// filled in from the configuration and the store when the FLOW does not name them), then what
/// the store knows — how often and when such a flow was refused, and matching flows (live ones
/// first). Exit 0 when the flow is allowed, 1 when blocked or rejected.
extension Tunnelctl {
    static func explainFlow(_ text: String, config: TunnelConfig, policies: String?, json: Bool, _ console: Console) throws -> ExitCode {
        let directory = policies ?? config.interface.policyDirectory
        let d = try decideFlow(text, config: config, directory: directory, console)
        let flow = d.flow, verdict = d.verdict, why = d.why
        let store = try CLIStore.read(config)

        // The store's view: refusals of this destination, and matching flows.
        let (dst, dstPort) = flow.direction == .out ? (flow.destination, flow.destinationPort) : (flow.source, flow.sourcePort)
        let key = StateStore.flowKey(proto: flow.proto.rawValue, dst: dst, dstPort: dstPort)
        // ICMP flows carry the echo identifier where ports would be: match them by addresses only.
        let hasPorts = flow.proto == .tcp || flow.proto == .udp
        let refusals = try store?.refusals(peer: flow.peer, kind: .flow, flowKey: key) ?? []
        let matching = try (store?.flows(peer: flow.peer, limit: 100_000) ?? []).filter { f in
            f.proto == flow.proto.rawValue && f.dst == flow.destination && f.src == flow.source
                && (!hasPorts || (f.dstPort == flow.destinationPort && (flow.sourcePort == 0 || f.srcPort == flow.sourcePort)))
                && (flow.host == nil || f.host?.lowercased() == flow.host?.lowercased())  // FLOW's host: that name's flows
        }
        let live = matching.filter { $0.closedAt == nil }
        // The daemon's table now (nil when tunneld is not running).
        var liveNow: [LiveFlow]? = nil
        if case .liveFlows(let all)? = try askIfRunning(config, .liveFlows(peer: flow.peer)) {
            liveNow = all.filter { f in
                f.proto == flow.proto.rawValue && f.dst == flow.destination.description && f.src == flow.source.description
                    && (!hasPorts || (f.dstPort == flow.destinationPort && (flow.sourcePort == 0 || f.srcPort == flow.sourcePort)))
            }
        }
        let daemonRunning = liveNow != nil
        let refusedCount = refusals.reduce(0) { $0 + $1.count }

        if json {
            if store == nil { console.error("note: \(noHistoryYet(config))") }
            let byID = Dictionary(matching.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            let report = FlowExplanationJSON(
                flow: FlowQueryJSON(flow, zone: cliTimeZone), verdict: verdict.action, allowed: verdict.action == .allow,
                default: why.isDefault, rule: why.ruleRef, text: why.text, reason: why.reason, refusedCount: refusedCount,
                firstRefused: refusals.map(\.firstAt).min().map(JSONTime.init(ms:)),
                lastRefused: refusals.map(\.lastAt).max().map(JSONTime.init(ms:)), daemonRunning: daemonRunning,
                flows: matching.prefix(20).map { FlowRow($0) }, liveFlows: live.count,
                live: liveNow.map { $0.map { FlowRow($0, stored: byID[$0.id].map { FlowRow($0) }) } })
            console.print(try encodeJSON(report))
            return verdict.action == .allow ? .ok : .failure
        }
        console.print("flow     \(flow.description)")
        console.print("verdict  \(verdict.action)")
        console.print("rule     " + why.summary)
        if let r = why.reason { console.print("reason   " + r) }
        console.print("peer     " + d.peerText)
        console.print("tier     " + d.tierText)
        if let first = refusals.map(\.firstAt).min(), let last = refusals.map(\.lastAt).max() {
            console.print("refused  \(refusedCount) time\(refusedCount == 1 ? "" : "s") (\(key)\(flow.peer.map { ", peer \($0)" } ?? "")), first \(dateTimeText(first)), last \(dateTimeText(last))")
            for r in refusals.prefix(3) { console.print("         \(r.count)× by \(r.rule) (\(r.reason)) in the hour from \(dateTimeText(r.window))") }
        } else if store == nil {
            console.print("refused  unknown: \(noHistoryYet(config))")
        } else {
            console.print("refused  never (no refusal of \(key) in the store)")
        }
        if let liveNow {
            if liveNow.isEmpty {
                console.print("live     no such flow in tunneld now")
            } else {
                console.print("live     \(liveNow.count) in tunneld now")
                for f in liveNow.prefix(5) {
                    console.print("         #\(f.id) \(f.verdict), out \(f.packetsOut) pkts \(bytesText(f.bytesOut)), in \(f.packetsIn) pkts \(bytesText(f.bytesIn)), since \(dateTimeText(f.firstSeenMs)), last \(clockText(f.lastSeenMs))")
                }
            }
        }
        if store == nil {
            // said on the "refused" line
        } else if matching.isEmpty {
            console.print("seen     no such flow in the store")
        } else {
            console.print("seen     \(matching.count) matching flow\(matching.count == 1 ? "" : "s") in the store, \(live.count) live\(daemonRunning ? "" : " (tunneld is not running: as last recorded)")")
            for f in (live + matching.filter({ $0.closedAt != nil })).prefix(5) { console.print("         " + flowLine(f)) }
        }
        return verdict.action == .allow ? .ok : .failure
    }

    /// `#17 tcp 10.99.0.2:40000 -> 192.168.1.5:22 (ads.example.com) block, out 3 pkts 180 B, in 0 pkts 0 B, 10:40:01–10:40:12 live`
    static func flowLine(_ f: Flow) -> String {
        let c = f.counters
        let state = f.closedAt == nil ? "live" : "closed (\(f.closeReason ?? "?"))"
        return "#\(f.id) \(flowText(f))\(f.host.map { " (\($0))" } ?? "") \(f.verdict.name) by \(decidedBy(f)), "
            + "out \(c.packetsOut) pkts \(bytesText(c.bytesOut)), "
            + "in \(c.packetsIn) pkts \(bytesText(c.bytesIn)), \(dateTimeText(f.firstSeen))–\(clockText(f.lastSeen)) \(state)"
    }

}
