/// The limits in force for one peer (docs/limits.md), resolved from its `[Peer]`
/// overrides, its tier's `[Tier NAME]` class and the defaults, in that order
/// (`LimitResolution`). Every field nil means "no limit of that kind".
///
/// Directions: *up* is what the peer sends (out of the tunnel, towards the internet), *down*
/// what it receives (into the tunnel).
public struct PeerLimits: Sendable, Hashable, Codable {
    /// Connected time per window (`Session`), ms; nil: no time limit.
    public var sessionMs: Int64?
    /// Pause after a window ends (`Pause`), ms.
    public var pauseMs: Int64
    /// Bytes per window, both directions together (`Quota`); nil: none.
    public var quotaBytes: UInt64?
    /// Bytes per window the peer sends (`QuotaUp`); nil: none.
    public var quotaUpBytes: UInt64?
    /// Bytes per window the peer receives (`QuotaDown`); nil: none.
    public var quotaDownBytes: UInt64?
    /// Shaped rate of what the peer sends (`RateUp`, or `Rate` for both), bits per second; nil: none.
    public var rateUpBitsPerSecond: UInt64?
    /// Shaped rate of what the peer receives (`RateDown`, or `Rate`), bits per second; nil: none.
    public var rateDownBitsPerSecond: UInt64?
    /// No traffic for this long ends the session, reason `idle` (`IdleTimeout`), ms; nil: the
    /// WireGuard default (a session with no handshake for 180 s is idle).
    public var idleTimeoutMs: Int64?
    /// Concurrent flows of the peer at most (`MaxFlows`); nil: only the shared table's size.
    public var maxFlows: Int?
    /// New flows per second (`NewFlowRate = N/s`, burst 2N); nil: none.
    public var newFlowsPerSecond: UInt32?

    /// No limit at all (premium).
    public init(sessionMs: Int64? = nil, pauseMs: Int64 = 0, quotaBytes: UInt64? = nil, quotaUpBytes: UInt64? = nil,
                quotaDownBytes: UInt64? = nil, rateUpBitsPerSecond: UInt64? = nil, rateDownBitsPerSecond: UInt64? = nil,
                idleTimeoutMs: Int64? = nil, maxFlows: Int? = nil, newFlowsPerSecond: UInt32? = nil)
    {
        self.sessionMs = sessionMs
        self.pauseMs = pauseMs
        self.quotaBytes = quotaBytes
        self.quotaUpBytes = quotaUpBytes
        self.quotaDownBytes = quotaDownBytes
        self.rateUpBitsPerSecond = rateUpBitsPerSecond
        self.rateDownBitsPerSecond = rateDownBitsPerSecond
        self.idleTimeoutMs = idleTimeoutMs
        self.maxFlows = maxFlows
        self.newFlowsPerSecond = newFlowsPerSecond
    }

    /// No limit of any kind.
    public static let unlimited = PeerLimits()

    /// True when the peer has windows (a session time or a byte quota): the watchdog opens one at
    /// its first connect and pauses it when the window ends.
    public var isWindowed: Bool { sessionMs != nil || hasQuota }

    /// True when some byte quota applies.
    public var hasQuota: Bool { quotaBytes != nil || quotaUpBytes != nil || quotaDownBytes != nil }

    /// True when the data path shapes the peer's traffic in some direction.
    public var isShaped: Bool { rateUpBitsPerSecond != nil || rateDownBitsPerSecond != nil }

    /// True when no limit of any kind applies (the pause is moot without a window).
    public var isUnlimited: Bool { !isWindowed && !isShaped && !capsFlows && idleTimeoutMs == nil }

    /// True when `used` reaches one of the quotas (the one quota rule: the watchdog's
    /// `WatchdogRules.quotaReached` and the data path's `QuotaMeter` both ask it).
    public func quotaReached(_ used: ByteUse) -> Bool {
        if let q = quotaBytes, used.total >= q { return true }
        if let q = quotaUpBytes, used.up >= q { return true }
        if let q = quotaDownBytes, used.down >= q { return true }
        return false
    }

    /// True when the peer's flows are capped (count or rate of new ones).
    public var capsFlows: Bool { maxFlows != nil || newFlowsPerSecond != nil }
}

extension PeerLimits {
    /// The limits that apply, as a person reads them (`session 30m then pause 23h30m, quota 1GiB,
    /// rate 5 Mbit/s each way, idle 10m, 512 flows, 50 new flows/s`); `no limits` when none.
    /// The one rendering: `session`, `explain`, `peers`, the status page and events use it.
    public var summary: String {
        var parts: [String] = []
        if let s = sessionMs { parts.append("session \(DurationFormat.format(ms: s)) then pause \(DurationFormat.format(ms: pauseMs))") }
        if hasQuota {
            var q: [String] = []
            if let b = quotaBytes { q.append(SizeFormat.format(bytes: Int64(clamping: b))) }
            if let b = quotaUpBytes { q.append("\(SizeFormat.format(bytes: Int64(clamping: b))) up") }
            if let b = quotaDownBytes { q.append("\(SizeFormat.format(bytes: Int64(clamping: b))) down") }
            parts.append("quota " + q.joined(separator: ", ") + (sessionMs == nil ? " then pause \(DurationFormat.format(ms: pauseMs))" : ""))
        }
        switch (rateUpBitsPerSecond, rateDownBitsPerSecond) {
        case let (u?, d?) where u == d: parts.append("rate \(LimitValue.formatRate(u)) each way")
        case let (u, d):
            if let u { parts.append("rate up \(LimitValue.formatRate(u))") }
            if let d { parts.append("rate down \(LimitValue.formatRate(d))") }
        }
        if let i = idleTimeoutMs { parts.append("idle \(DurationFormat.format(ms: i))") }
        if let m = maxFlows { parts.append("\(m) flows") }
        if let n = newFlowsPerSecond { parts.append("\(n) new flows/s") }
        return parts.isEmpty ? "no limits" : parts.joined(separator: ", ")
    }

    /// `312.0 MiB of 1GiB used` for the tightest quota, nil without a quota.
    public func quotaText(_ used: ByteUse) -> String? {

        var best: (left: UInt64, text: String)?
        func consider(_ limit: UInt64?, _ u: UInt64, _ what: String) {
            guard let limit else { return }
            let left = limit > u ? limit - u : 0
            if best == nil || left < best!.left { best = (left, "\(SizeFormat.approximate(bytes: min(u, limit))) of \(SizeFormat.format(bytes: Int64(clamping: limit)))\(what) used") }
        }
        consider(quotaBytes, used.total, "")
        consider(quotaUpBytes, used.up, " up")
        consider(quotaDownBytes, used.down, " down")
        return best?.text
    }
}
