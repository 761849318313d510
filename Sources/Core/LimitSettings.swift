/// One limit as a config section writes it: absent (inherit from the next layer), `none` (no
/// limit, overriding a lower layer), or a value.
public enum LimitSetting<Value: Sendable & Hashable>: Sendable, Hashable {
    /// `KEY = none`: no limit here, whatever the lower layers say.
    case unlimited
    /// `KEY = VALUE`.
    case value(Value)

    /// The value, nil for `unlimited`.
    public var limit: Value? {
        if case .value(let v) = self { return v }
        return nil
    }
}

/// The limit keys of one `[Tier NAME]` or `[Peer]` section (docs/limits.md): each nil when the
/// section does not set it (the next layer decides). `LimitResolution` layers them.
public struct LimitSettings: Sendable, Hashable {
    public var session: LimitSetting<Int64>?
    public var pause: Int64?
    public var quota: LimitSetting<UInt64>?
    public var quotaUp: LimitSetting<UInt64>?
    public var quotaDown: LimitSetting<UInt64>?
    public var rateUp: LimitSetting<UInt64>?
    public var rateDown: LimitSetting<UInt64>?
    public var idleTimeout: LimitSetting<Int64>?
    public var maxFlows: LimitSetting<Int>?
    public var newFlowRate: LimitSetting<UInt32>?

    /// Nothing set.
    public init() {}

    /// True when the section sets no limit key.
    public var isEmpty: Bool { self == LimitSettings() }

    /// The keys, canonical spelling, as `[Tier]` and `[Peer]` sections take them.
    public static let keys = ["Session", "Pause", "Quota", "QuotaUp", "QuotaDown", "Rate", "RateUp", "RateDown",
                              "IdleTimeout", "MaxFlows", "NewFlowRate"]

    /// Sets `key` (one of `keys`) from its text. Throws what is wrong and what to write.
    public mutating func set(_ key: String, _ text: String) throws(ValueError) {
        let none = ["none", "unlimited", "off"].contains(text.trimmedSpaces().lowercased())
        switch key {
        case "Session":
            session = none ? .unlimited : .value(try LimitValue.duration(text))
        case "Pause":
            guard !none else { pause = 0; return }
            pause = try DurationFormat.parseFinite(text, allowZero: true)
        case "Quota", "QuotaUp", "QuotaDown":
            let v: LimitSetting<UInt64> = none ? .unlimited : .value(try LimitValue.bytes(text))
            if key == "Quota" { quota = v } else if key == "QuotaUp" { quotaUp = v } else { quotaDown = v }
        case "Rate", "RateUp", "RateDown":
            let v: LimitSetting<UInt64> = none ? .unlimited : .value(try LimitValue.rate(text))
            if key != "RateDown" { rateUp = v }
            if key != "RateUp" { rateDown = v }
        case "IdleTimeout":
            idleTimeout = none ? .unlimited : .value(try LimitValue.duration(text))
        case "MaxFlows":
            maxFlows = none ? .unlimited : .value(try LimitValue.count(text))
        case "NewFlowRate":
            newFlowRate = none ? .unlimited : .value(try LimitValue.perSecond(text))
        default:
            throw ValueError("'\(key)' is not a limit", hint: "limits are " + LimitSettings.keys.joined(separator: ", "))
        }
    }

    /// `self` over `lower`: each key this section sets wins, the others come from `lower`.
    public func over(_ lower: LimitSettings) -> LimitSettings {
        var r = lower
        if let v = session { r.session = v }
        if let v = pause { r.pause = v }
        if let v = quota { r.quota = v }
        if let v = quotaUp { r.quotaUp = v }
        if let v = quotaDown { r.quotaDown = v }
        if let v = rateUp { r.rateUp = v }
        if let v = rateDown { r.rateDown = v }
        if let v = idleTimeout { r.idleTimeout = v }
        if let v = maxFlows { r.maxFlows = v }
        if let v = newFlowRate { r.newFlowRate = v }
        return r
    }

    /// The limits these settings give (an unset key: no limit; an unset pause: `defaultPauseMs`).
    public func resolved(defaultPauseMs: Int64) -> PeerLimits {
        PeerLimits(sessionMs: session?.limit, pauseMs: pause ?? defaultPauseMs, quotaBytes: quota?.limit,
                   quotaUpBytes: quotaUp?.limit, quotaDownBytes: quotaDown?.limit, rateUpBitsPerSecond: rateUp?.limit,
                   rateDownBitsPerSecond: rateDown?.limit, idleTimeoutMs: idleTimeout?.limit, maxFlows: maxFlows?.limit,
                   newFlowsPerSecond: newFlowRate?.limit)
    }
}

/// The parsers of limit values (one owner: the config, `tunnelctl` and the status page read
/// limits through them).
public enum LimitValue {
    /// A positive duration (`30m`, `1h30m`).
    public static func duration(_ text: String) throws(ValueError) -> Int64 {
        try DurationFormat.parseFinite(text)
    }

    /// A positive byte count (`1GiB`, `500MB`, `20MiB`).
    public static func bytes(_ text: String) throws(ValueError) -> UInt64 {
        guard let b = try SizeFormat.parse(text, allowUnlimited: false) else { throw ValueError("'\(text)' is not a size") }
        return UInt64(b)
    }

    static let rateUnits: [(String, Double)] = [
        ("bit", 1), ("kbit", 1e3), ("mbit", 1e6), ("gbit", 1e9), ("bps", 1), ("kbps", 1e3), ("mbps", 1e6), ("gbps", 1e9),
        ("b", 8), ("kb", 8e3), ("mb", 8e6), ("gb", 8e9), ("kib", 8 * 1024), ("mib", 8 * 1024 * 1024),
    ]

    /// A rate in bits per second (`5Mbit`, `10Mbit/s`, `500kbit`, `2MB/s` = 16 Mbit/s), at least
    /// 8 kbit/s (one small packet per 100 ms) and at most 100 Gbit/s.
    public static func rate(_ text: String) throws(ValueError) -> UInt64 {
        var t = text.trimmedSpaces().lowercased()
        if t.hasSuffix("/s") { t.removeLast(2) }
        let hint = "write a rate like 5Mbit, 500kbit, 1Gbit (bits per second; MB/s for bytes), or none"
        let number = t.prefix(while: { ($0.isASCII && $0.isNumber) || $0 == "." })
        let unit = String(t.dropFirst(number.count)).trimmedSpaces()
        guard !number.isEmpty, let value = Double(number) else { throw ValueError("'\(text)' is not a rate", hint: hint) }
        guard let m = rateUnits.first(where: { $0.0 == unit })?.1 else {
            throw ValueError(unit.isEmpty ? "'\(text)' has no unit" : "unknown unit '\(unit)' in '\(text)'", hint: hint)
        }
        let bits = value * m
        guard bits >= 8_000, bits <= 100e9 else { throw ValueError("'\(text)' is out of range", hint: "use 8kbit to 100Gbit") }
        return UInt64(bits.rounded())
    }

    /// A positive count (`512`).
    public static func count(_ text: String) throws(ValueError) -> Int {
        let t = text.trimmedSpaces()
        guard t.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(t), n >= 1, n <= 1 << 24 else {
            throw ValueError("'\(text)' is not a count", hint: "write a whole number from 1 to 16777216, or none")
        }
        return n
    }

    /// Events per second (`50/s`, `50`, `3000/min`), rounded up to a whole number per second.
    public static func perSecond(_ text: String) throws(ValueError) -> UInt32 {
        let t = text.trimmedSpaces().lowercased()
        let hint = "write e.g. 50/s or 3000/min, or none"
        var number = Substring(t), divisor: Double = 1
        if let slash = t.firstIndex(of: "/") {
            number = t[..<slash]
            switch t[t.index(after: slash)...] {
            case "s", "sec", "second": divisor = 1
            case "m", "min", "minute": divisor = 60
            default: throw ValueError("'\(text)' is not a rate", hint: hint)
            }
        }
        guard let v = Double(number), v > 0 else { throw ValueError("'\(text)' is not a rate", hint: hint) }
        let perSecond = (v / divisor).rounded(.up)
        guard perSecond <= 1_000_000 else { throw ValueError("'\(text)' is out of range", hint: "use at most 1000000/s") }
        return UInt32(perSecond)
    }

    /// `5 Mbit/s`, `500 kbit/s` (the unit a person reads; exact to three figures).
    public static func formatRate(_ bitsPerSecond: UInt64) -> String {
        let b = Double(bitsPerSecond)
        func short(_ v: Double) -> String {
            v == v.rounded() ? String(Int64(v)) : String((v * 100).rounded() / 100)
        }
        if b >= 1e9 { return short(b / 1e9) + " Gbit/s" }
        if b >= 1e6 { return short(b / 1e6) + " Mbit/s" }
        if b >= 1e3 { return short(b / 1e3) + " kbit/s" }
        return short(b) + " bit/s"
    }
}

/// The tier classes of a config and how a peer's limits come out of them: the peer's
/// own keys over its tier's `[Tier NAME]` keys over the built-in defaults of that tier (`free`:
/// `FreeSession` then `FreePause`; every other tier: no limit, pause `FreePause` once a window
/// exists). Pure; the config builds it, the registry resolves every peer through it.
public struct TierClasses: Sendable, Hashable {
    /// `[Tier NAME]` sections by tier (the predefined ones are present even when not written).
    public private(set) var classes: [PeerTier: LimitSettings]
    /// `FreeSession` / `FreePause`, ms.
    public var freeSessionMs: Int64
    public var freePauseMs: Int64

    /// The predefined tiers with the given free window, plus `classes`.
    public init(freeSessionMs: Int64 = 15 * 60_000, freePauseMs: Int64 = 45 * 60_000, classes: [PeerTier: LimitSettings] = [:]) {
        self.freeSessionMs = freeSessionMs
        self.freePauseMs = freePauseMs
        var c = classes
        for t in PeerTier.predefined where c[t] == nil { c[t] = LimitSettings() }
        self.classes = c
    }

    /// Every configured tier, sorted by name.
    public var names: [PeerTier] { classes.keys.sorted() }

    /// True when `tier` is predefined or has a `[Tier]` section.
    public func isConfigured(_ tier: PeerTier) -> Bool { classes[tier] != nil }

    /// The built-in layer of `tier`.
    public func defaults(of tier: PeerTier) -> LimitSettings {
        var d = LimitSettings()
        if tier == .free {
            d.session = .value(freeSessionMs)
            d.pause = freePauseMs
        }
        return d
    }

    /// The settings of `tier` over its defaults (an unknown tier: no limit).
    public func settings(of tier: PeerTier) -> LimitSettings {
        (classes[tier] ?? LimitSettings()).over(defaults(of: tier))
    }

    /// A peer's limits: `peer` over its tier's class over the tier's defaults.
    public func resolve(tier: PeerTier, peer: LimitSettings = LimitSettings()) -> PeerLimits {
        peer.over(settings(of: tier)).resolved(defaultPauseMs: freePauseMs)
    }
}
