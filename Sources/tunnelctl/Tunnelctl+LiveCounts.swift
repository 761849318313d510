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
import Store

/// The packets and bytes of open flows, for `flows` and `timeline`. The store has a flow's counts
/// as of its last record (tunneld writes them when the flow opens, on its periodic updates and
/// when it closes), so an open row alone would show a flow that carried five pings as `0p/0 B`.
/// The running tunneld's flow table has the counts now: it is asked once (control request
/// `liveFlows`, as `explain 'FLOW'` asks), and a row it holds shows them; any other open row says
/// its counts are as of its last record.
struct LiveFlowCounts {
    /// The daemon's open flows by id; nil when it could not be asked.
    let byID: [Int64: LiveFlow]?
    /// This router's gateway name: only its own rows are in its tunneld's table.
    let gateway: String
    /// Why `byID` is nil: tunneld is not running, or it could not be asked (this user may read
    /// the store but not use control.sock, …) — the history is still the answer then.
    let unavailable: String?

    /// Asks this router's tunneld for its flows (one peer's with `peer`).
    static func ask(_ config: TunnelConfig, peer: String?) -> LiveFlowCounts {
        let gateway = config.interface.gatewayNameInForce
        do {
            guard let reply = try Tunnelctl.askIfRunning(config, .liveFlows(peer: peer)) else {
                return LiveFlowCounts(byID: nil, gateway: gateway, unavailable: "tunneld is not running")
            }
            guard case .liveFlows(let all) = reply else {
                return LiveFlowCounts(byID: nil, gateway: gateway, unavailable: "tunneld answered \(reply.type) to liveFlows")
            }
            return LiveFlowCounts(byID: Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }), gateway: gateway,
                                  unavailable: nil)
        } catch let e as CLIError {
            return LiveFlowCounts(byID: nil, gateway: gateway, unavailable: "tunneld could not be asked (\(e.message))")
        } catch {
            return LiveFlowCounts(byID: nil, gateway: gateway, unavailable: "tunneld could not be asked (\(error))")
        }
    }

    /// The daemon's entry for flow `id` when the row is open, this router's own (`rowGateway`
    /// nil or this gateway) and in the daemon's table now.
    func live(id: Int64, open: Bool, rowGateway: String?) -> LiveFlow? {
        guard open, rowGateway == nil || rowGateway == gateway else { return nil }
        return byID?[id]
    }

    /// `f` with the daemon's counts and last packet when it has them.
    func current(_ f: Flow, rowGateway: String?) -> (flow: Flow, live: Bool) {
        guard let l = live(id: f.id, open: f.closedAt == nil, rowGateway: rowGateway) else { return (f, false) }
        var f = f
        f.counters = FlowCounters(bytesOut: l.bytesOut, bytesIn: l.bytesIn, packetsOut: l.packetsOut, packetsIn: l.packetsIn)
        f.lastSeen = max(f.lastSeen, l.lastSeenMs)
        return (f, true)
    }

    /// Why an open row's counts are as of its last record.
    var staleReason: String {
        unavailable ?? "it is not in tunneld's flow table now (another gateway's row, or ended and not yet recorded)"
    }
}

extension Tunnelctl {
    /// `5p/420 B out, 5p/420 B in`.
    static func countsText(_ c: FlowCounters) -> String {
        "\(c.packetsOut)p/\(bytesText(c.bytesOut)) out, \(c.packetsIn)p/\(bytesText(c.bytesIn)) in"
    }

    /// The timeline's open flows with the counts they have now: a `flow-open` event of a flow
    /// still open says its packets and bytes — tunneld's current ones, or those of the last
    /// record, saying so — and its JSON row carries the same counts.
    static func withOpenFlowCounts(_ events: [TimelineEvent], _ counts: LiveFlowCounts) -> [TimelineEvent] {
        events.map { e in
            guard e.event == "flow-open", var row = e.flow, row.closedAt == nil else { return e }
            var e = e
            if let l = counts.live(id: row.id, open: true, rowGateway: row.gateway) {
                row.bytesOut = l.bytesOut
                row.bytesIn = l.bytesIn
                row.packetsOut = l.packetsOut
                row.packetsIn = l.packetsIn
                row.lastSeen = JSONTime(ms: max(row.lastSeen.ms, l.lastSeenMs))
                e.flow = row
                e.summary += "; open, now \(countsText(row.counters))"
            } else {
                e.summary += "; open, \(countsText(row.counters)) as of its last record at \(clockText(row.lastSeen.ms))"
            }
            return e
        }
    }
}

extension FlowRow {
    /// The row's packets and bytes.
    var counters: FlowCounters { FlowCounters(bytesOut: bytesOut, bytesIn: bytesIn, packetsOut: packetsOut, packetsIn: packetsIn) }
}
