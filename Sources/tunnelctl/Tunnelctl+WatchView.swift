import ControlProtocol
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import LiveFeed
import Runtime

/// The terminal view of `tunnelctl watch`: redrawn about once a second with the top flows by
/// rate over the last second, the newest flows, and blocks and refusals as they happen.
struct WatchView {
    struct FlowRate {
        var record: LiveRecord
        var bytes: UInt64 = 0
        var packets: UInt64 = 0
    }

    /// Bytes and packets per flow since the last redraw.
    var rates: [UInt64: FlowRate] = [:]
    /// Newest flow-open records (newest last).
    var newFlows: [LiveRecord] = []
    /// Newest block/reject/refusal records (newest last); one per flow for packets.
    var blocks: [LiveRecord] = []
    var blockedFlows: Set<UInt64> = []
    var recordsThisSecond = 0
    var totalRecords: UInt64 = 0
    var dropped: UInt64 = 0
    var notice = ""
    /// The peers as tunneld last reported them (session state, time left, limits in force), or
    /// why they are not known (tunneld not answering): never a stale table presented as current.
    var peers: Result<[PeerStatus], WatchPeers.Unavailable>? = nil
    static let keep = 8

    mutating func add(_ r: LiveRecord) {
        recordsThisSecond += 1
        totalRecords += 1
        switch r.kind {
        case .packet:
            var rate = rates[r.flowID] ?? FlowRate(record: r)
            rate.bytes += UInt64(r.length)
            rate.packets += 1
            rates[r.flowID] = rate
            if r.verdict != .allow && !blockedFlows.contains(r.flowID) {
                blockedFlows.insert(r.flowID)
                WatchView.push(&blocks, r)
            }
        case .flowOpen:
            WatchView.push(&newFlows, r)
        case .refusal:
            WatchView.push(&blocks, r)
        default:
            break
        }
    }

    private static func push(_ list: inout [LiveRecord], _ r: LiveRecord) {
        list.append(r)
        if list.count > WatchView.keep { list.removeFirst(list.count - WatchView.keep) }
    }

    /// Starts the next one-second window.
    mutating func tick() {
        rates.removeAll(keepingCapacity: true)
        recordsThisSecond = 0
    }

    /// The daemon restarted: flow ids start again.
    mutating func reattached() {
        rates.removeAll()
        blockedFlows.removeAll()
    }

    /// The PEERS section: each peer's state, the time its window or pause has left, and the limits
    /// that apply (with the quota's use), as `tunnelctl peers` shows them.
    func peerLines(nowMs: Int64) -> [String] {
        var lines = ["PEERS"]
        switch peers {
        case nil:
            lines.append("  (asking tunneld)")
        case .failure(let why)?:
            lines.append("  (not known: \(why.message))")
        case .success(let list)?:
            if list.isEmpty { lines.append("  (no peers configured)"); break }
            var rows = [["  PEER", "TIER", "STATE", "TIME", "LIMITS"]]
            for p in list.prefix(20) {
                rows.append(["  " + p.name, p.tier.rawValue, p.session.rawValue, WatchView.timeText(p, nowMs: nowMs),
                             Tunnelctl.limitsText(p)])
            }
            lines.append(Tunnelctl.table(rows))
            if list.count > 20 { lines.append("  (\(list.count - 20) more: tunnelctl peers)") }
        }
        return lines
    }

    /// `12m30s left`, `paused, 5m left`, or `-` (no window).
    static func timeText(_ p: PeerStatus, nowMs: Int64) -> String {
        if p.session == .paused, let r = p.reconnectAtMs {
            return "paused, \(Tunnelctl.remainingText(max(0, (r - nowMs) / 1000))) left"
        }
        if p.session == .connected, let a = p.allowedUntilMs, a > nowMs, a < WindowDates.noEnd {
            return "\(Tunnelctl.remainingText(max(0, (a - nowMs) / 1000))) left"
        }
        return "-"
    }

    /// The whole screen (starts with the ANSI home + clear sequence).
    func render(nowNanoseconds: UInt64) -> String {
        var lines: [String] = []
        let time = Tunnelctl.timeText(nowNanoseconds)
        lines.append("tunnelctl watch — \(time.prefix(19).replacingAll("T", with: " ")) UTC — "
            + "\(recordsThisSecond) records/s, \(totalRecords) total, \(dropped) dropped by the ring — Ctrl-C to quit")
        if !notice.isEmpty { lines.append(notice) }
        lines.append("")
        lines.append("TOP FLOWS (last second)")
        let top = rates.values.sorted { $0.bytes > $1.bytes }.prefix(10)
        if top.isEmpty {
            lines.append("  (no traffic)")
        } else {
            var rows = [["  RATE", "PKT/S", "PEER", "PROTO", "FLOW", "VERDICT", "ID"]]
            for f in top {
                let r = f.record
                rows.append(["  " + Tunnelctl.formatRate(f.bytes), "\(f.packets)", Tunnelctl.peerText(r),
                             Tunnelctl.protocolName(r.ipProtocol),
                             "\(Tunnelctl.endpoint(r, source: true)) > \(Tunnelctl.endpoint(r, source: false))",
                             r.verdict?.name ?? "?", "\(r.flowID)"])
            }
            lines.append(Tunnelctl.table(rows))
        }
        lines.append("")
        lines += peerLines(nowMs: Int64(nowNanoseconds / 1_000_000))
        lines.append("")
        lines.append("NEW FLOWS")
        lines += newFlows.isEmpty ? ["  (none yet)"] : newFlows.reversed().map { "  " + Tunnelctl.textLine($0) }
        lines.append("")
        lines.append("BLOCKS AND REFUSALS")
        lines += blocks.isEmpty ? ["  (none yet)"] : blocks.reversed().map { "  " + Tunnelctl.textLine($0) }
        return "\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\n")
    }
}

extension Tunnelctl {
    /// Bytes per second as bits: `12.3 Mbit/s`.
    static func formatRate(_ bytesPerSecond: UInt64) -> String {
        let bits = Double(bytesPerSecond) * 8
        if bits >= 1e9 { return Sys.fixed(bits / 1e9, digits: 1) + " Gbit/s" }
        if bits >= 1e6 { return Sys.fixed(bits / 1e6, digits: 1) + " Mbit/s" }
        if bits >= 1e3 { return Sys.fixed(bits / 1e3, digits: 1) + " kbit/s" }
        return Sys.fixed(bits, digits: 0) + " bit/s"
    }
}

/// The live view's peer table: `peers` asked of tunneld every two seconds over control.sock.
struct WatchPeers {
    struct Unavailable: Error, Hashable {
        var message: String
    }
    let socketPath: String
    private var fetchedAt: UInt64 = 0
    static let maxAgeNanoseconds: UInt64 = 2_000_000_000

    init(ringPath: String) {
        socketPath = PathText.directory(of: ringPath) + "/control.sock"
    }

    /// The peer names tunneld next to `ringPath` reports, nil when it does not answer.
    static func names(ringPath: String) -> [String]? {
        var p = WatchPeers(ringPath: ringPath)
        guard case .success(let list)? = p.refreshIfStale(now: 0) else { return nil }
        return list.map(\.name)
    }

    /// A fresh answer when the last is older than two seconds, else nil (keep what is shown).
    mutating func refreshIfStale(now: UInt64) -> Result<[PeerStatus], Unavailable>? {
        guard fetchedAt == 0 || now &- fetchedAt >= WatchPeers.maxAgeNanoseconds else { return nil }
        fetchedAt = now
        let client = ControlClient(socketPath: socketPath, timeout: .seconds(1))
        do {
            switch try client.send(.peers) {
            case .peers(let list): return .success(list)
            case let other: return .failure(Unavailable(message: "tunneld answered \(other.type) to peers"))
            }
        } catch {
            return .failure(Unavailable(message: "tunneld does not answer on \(socketPath) (\(error))"))
        }
    }
}
