import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The status page's two forms, pure functions of a ``PeerStatusPage`` (no I/O, no clock: the
/// page carries its `now`): a small HTML page for a phone's browser (no script; it reloads itself
/// every 30 s) at `/`, and JSON (docs/json.md "Status page") at `/status.json`.
///
/// Every text that comes from configuration or state is HTML-escaped (a peer name is whatever
/// the operator wrote). Times are shown relative (`in 12m30s`, `5m10s ago`) and as a UTC date.
public enum StatusPageRender {
    /// `Content-Type` of ``html(_:)``.
    public static let htmlType = "text/html; charset=utf-8"
    /// `Content-Type` of ``json(_:)``.
    public static let jsonType = "application/json; charset=utf-8"
    /// Seconds between the page's own reloads (`<meta http-equiv="refresh">`).
    public static let refreshSeconds = 30

    // MARK: - HTML

    /// The page as HTML.
    public static func html(_ p: PeerStatusPage) -> String {
        var rows: [(String, String)] = []
        rows.append(("Tier", esc(p.tier)))
        rows.append(("State", stateText(p)))
        if let since = p.connectedSinceMs { rows.append(("Connected since", dated(since, now: p.nowMs))) }
        rows.append(("Session per window", p.limits.sessionMs.map { esc(DurationFormat.format(ms: $0)) } ?? "unlimited"))
        if let left = p.remainingSessionMs { rows.append(("Session time left", esc(DurationFormat.remaining(seconds: left / 1000)))) }
        if let end = p.windowEndMs { rows.append(("Window ends", dated(end, now: p.nowMs))) }
        if let end = p.pauseEndMs { rows.append(("Pause ends", dated(end, now: p.nowMs) + (p.refusedNow ? " (refused until then)" : ""))) }
        if p.limits.isWindowed, p.limits.pauseMs > 0 { rows.append(("Pause after a window", esc(DurationFormat.format(ms: p.limits.pauseMs)))) }
        rows.append(("Quota", quotaText(p)))
        rows.append(("Rate up / down", "\(rateText(p.limits.rateUpBitsPerSecond)) / \(rateText(p.limits.rateDownBitsPerSecond))"))
        rows.append(("Idle timeout", p.limits.idleTimeoutMs.map { esc(DurationFormat.format(ms: $0)) } ?? "none"))
        if let n = p.limits.maxFlows { rows.append(("Connections at most", "\(n)")) }
        if let n = p.limits.newFlowsPerSecond { rows.append(("New connections", "\(n) per second")) }
        rows.append(("Expires", p.expiresAtMs.map { p.nowMs >= $0 ? "expired " + dated($0, now: p.nowMs) : dated($0, now: p.nowMs) } ?? "never"))
        rows.append(("Disabled", p.disabled ? "yes" : "no"))

        let table = rows.map { "<tr><th>\($0.0)</th><td>\($0.1)</td></tr>" }.joined(separator: "\n")
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta http-equiv="refresh" content="\(refreshSeconds)">
            <title>\(esc(p.peer)): TunnelVision status</title>
            <style>
            body{font-family:sans-serif;font-size:1.25rem;line-height:1.5;margin:1rem auto;padding:0 1rem;max-width:40rem}
            h1{font-size:1.75rem;margin:.5rem 0}p.state{font-size:1.5rem;font-weight:bold}
            table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.4rem .3rem;border-bottom:1px solid #ccc}
            th{font-weight:normal;color:#555;width:45%}small{color:#555}
            </style>
            </head>
            <body>
            <h1>\(esc(p.peer))</h1>
            <p class="state">\(headline(p))</p>
            <table>
            \(table)
            </table>
            <p><small>As of \(utc(p.nowMs)); this page reloads every \(refreshSeconds) s. Also as <a href="/status.json">JSON</a>.</small></p>
            </body>
            </html>

            """
    }

    /// The one line at the top: what the peer most wants to know.
    static func headline(_ p: PeerStatusPage) -> String {
        switch p.state {
        case .disabled: return "Disabled by the operator"
        case .expired: return "Expired"
        case .paused: return "Paused" + (p.pauseEndMs.map { ": you can reconnect " + relative($0, now: p.nowMs) } ?? "")
        case .connected:
            if let left = p.remainingSessionMs, p.windowEndMs != nil { return "Connected: \(esc(DurationFormat.remaining(seconds: left / 1000))) left" }
            return "Connected"
        case .disconnected: return "Not connected"
        }
    }

    static func stateText(_ p: PeerStatusPage) -> String {
        p.state.rawValue + (p.refusedNow && p.state != .paused ? " (refused now)" : "")
    }

    static func quotaText(_ p: PeerStatusPage) -> String {
        let l = p.limits
        guard l.hasQuota else { return "none" }
        var parts: [String] = []
        func part(_ label: String, _ used: UInt64?, _ limit: UInt64?) {
            guard let limit else { return }
            let limitText = esc(SizeFormat.approximate(bytes: limit))
            if let used {
                parts.append("\(label)\(esc(SizeFormat.approximate(bytes: used))) of \(limitText) used")
            } else {
                parts.append("\(label)\(limitText) per window (use not counted)")
            }
        }
        part("", p.quotaUsed?.total, l.quotaBytes)
        part("up: ", p.quotaUsed?.up, l.quotaUpBytes)
        part("down: ", p.quotaUsed?.down, l.quotaDownBytes)
        return parts.joined(separator: "<br>")
    }

    /// `5 Mbit/s`, `1.5 Mbit/s` (`LimitValue.formatRate`, the one rate text), `unlimited`.
    static func rateText(_ bitsPerSecond: UInt64?) -> String {
        bitsPerSecond.map(LimitValue.formatRate) ?? "unlimited"
    }

    /// `in 12m30s (2026-12-02 15:50:00 UTC)`, `12m30s ago (2026-12-02 15:25:00 UTC)`.
    static func dated(_ ms: Int64, now: Int64) -> String { "\(relative(ms, now: now)) (\(utc(ms)))" }
    /// `in 12m30s` for a future time, `12m30s ago` for a past one, `now`.
    static func relative(_ ms: Int64, now: Int64) -> String {
        let d = ms - now
        if d == 0 { return "now" }
        return d > 0 ? "in " + DurationFormat.remaining(seconds: (d + 999) / 1000)
            : DurationFormat.remaining(seconds: -d / 1000) + " ago"
    }
    /// `2026-12-02 15:50:00 UTC`.
    static func utc(_ ms: Int64) -> String { esc(TimeText.local(ms, zone: utcZone)) }
    static let utcZone = Zone.utc

    /// `text` safe inside HTML text and attribute values.
    public static func esc(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                if c.value < 0x20 || c.value == 0x7F || (0x80..<0xA0).contains(c.value) || c.value == 0x2028 || c.value == 0x2029 {
                    out += "&#\(c.value);"
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out
    }

    // MARK: - JSON

    /// The page as JSON (docs/json.md "Status page": keys sorted, every field present, null when
    /// it does not apply; times ISO 8601 UTC; durations in seconds, sizes in bytes).
    public static func json(_ p: PeerStatusPage) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(PageJSON(p)), let text = String(data: data, encoding: .utf8) else {
            return "{}\n"  // unreachable: every field is a plain value
        }
        return text + "\n"
    }

    /// Seconds as docs/json.md writes durations: an integer when whole, else a fraction.
    struct Seconds: Encodable {
        var ms: Int64
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            if ms % 1000 == 0 { try c.encode(ms / 1000) } else { try c.encode(Double(ms) / 1000) }
        }
    }

    struct PageJSON: Encodable {
        var peer: String
        var tier: String
        var state: String
        var refusedNow: Bool
        var generatedAt: String
        var connectedSince: String?
        var windowEndsAt: String?
        var remainingSessionSeconds: Seconds?
        var pauseEndsAt: String?
        var expiresAt: String?
        var disabled: Bool
        var limits: LimitsJSON
        var quotaUsed: QuotaJSON?

        init(_ p: PeerStatusPage) {
            peer = p.peer
            tier = p.tier
            state = p.state.rawValue
            refusedNow = p.refusedNow
            generatedAt = TimeText.iso(p.nowMs)
            connectedSince = p.connectedSinceMs.map(TimeText.iso)
            windowEndsAt = p.windowEndMs.map(TimeText.iso)
            remainingSessionSeconds = p.remainingSessionMs.map { Seconds(ms: $0 / 1000 * 1000) }
            pauseEndsAt = p.pauseEndMs.map(TimeText.iso)
            expiresAt = p.expiresAtMs.map(TimeText.iso)
            disabled = p.disabled
            limits = LimitsJSON(p.limits)
            quotaUsed = p.quotaUsed.map { QuotaJSON(upBytes: $0.up, downBytes: $0.down, totalBytes: $0.total) }
        }

        enum CodingKeys: String, CodingKey {
            case peer, tier, state, refusedNow, generatedAt, connectedSince, windowEndsAt, remainingSessionSeconds, pauseEndsAt,
                 expiresAt, disabled, limits, quotaUsed
        }

        // Explicit, so that nil is written as null (docs/json.md: every field is always there).
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(peer, forKey: .peer)
            try c.encode(tier, forKey: .tier)
            try c.encode(state, forKey: .state)
            try c.encode(refusedNow, forKey: .refusedNow)
            try c.encode(generatedAt, forKey: .generatedAt)
            try c.encode(connectedSince, forKey: .connectedSince)
            try c.encode(windowEndsAt, forKey: .windowEndsAt)
            try c.encode(remainingSessionSeconds, forKey: .remainingSessionSeconds)
            try c.encode(pauseEndsAt, forKey: .pauseEndsAt)
            try c.encode(expiresAt, forKey: .expiresAt)
            try c.encode(disabled, forKey: .disabled)
            try c.encode(limits, forKey: .limits)
            try c.encode(quotaUsed, forKey: .quotaUsed)
        }
    }

    struct LimitsJSON: Encodable {
        var l: PeerLimits
        init(_ l: PeerLimits) { self.l = l }
        enum CodingKeys: String, CodingKey {
            case sessionSeconds, pauseSeconds, quotaBytes, quotaUpBytes, quotaDownBytes, rateUpBitsPerSecond, rateDownBitsPerSecond,
                 idleTimeoutSeconds, maxFlows, newFlowsPerSecond
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(l.sessionMs.map { Seconds(ms: $0) }, forKey: .sessionSeconds)
            try c.encode(Seconds(ms: l.pauseMs), forKey: .pauseSeconds)
            try c.encode(l.quotaBytes, forKey: .quotaBytes)
            try c.encode(l.quotaUpBytes, forKey: .quotaUpBytes)
            try c.encode(l.quotaDownBytes, forKey: .quotaDownBytes)
            try c.encode(l.rateUpBitsPerSecond, forKey: .rateUpBitsPerSecond)
            try c.encode(l.rateDownBitsPerSecond, forKey: .rateDownBitsPerSecond)
            try c.encode(l.idleTimeoutMs.map { Seconds(ms: $0) }, forKey: .idleTimeoutSeconds)
            try c.encode(l.maxFlows, forKey: .maxFlows)
            try c.encode(l.newFlowsPerSecond, forKey: .newFlowsPerSecond)
        }
    }

    struct QuotaJSON: Encodable {
        var upBytes: UInt64
        var downBytes: UInt64
        var totalBytes: UInt64
    }
}
