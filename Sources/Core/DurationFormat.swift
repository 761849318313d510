/// The one parser and formatter of durations, used by the config file (`FreeSession = 15m`), the
/// settings row (`retention set flows=7d`) and every CLI option (`--since 1h30m`).
///
/// Text is one or more `NUMBER UNIT` groups without spaces: units `ms`, `s`, `m`, `h`, `d`, `w`
/// (`15m`, `1h30m`, `500ms`, `2w`). A bare number is refused (which unit would it be?). Where a
/// setting allows "no limit", `forever` (or `never`) parses to nil.
public enum DurationFormat {
    /// The units, longest first where prefixes collide (`ms` before `m`).
    static let units: [(suffix: String, ms: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000),
    ]
    /// The longest duration accepted: 100 years (anything longer is a typo).
    public static let maximumMs: Int64 = 36_500 * 86_400_000
    /// The unit list as error hints show it.
    public static let unitList = "ms, s, m, h, d, w"

    /// Milliseconds for `text`; nil for `forever` / `never` when `allowForever`. Zero (`0s`) only
    /// when `allowZero`. Throws a `ValueError` naming what is wrong and the accepted forms.
    public static func parse(_ text: some StringProtocol, allowForever: Bool = false, allowZero: Bool = false) throws(ValueError) -> Int64? {
        let t = String(text).trimmedSpaces().lowercased()
        let example = allowForever ? "e.g. 15m, 1h30m, 7d or forever" : "e.g. 15m, 1h30m or 7d"
        if t == "forever" || t == "never" {
            guard allowForever else { throw ValueError("'\(text)' is not allowed here", hint: "write a duration (\(unitList)), \(example)") }
            return nil
        }
        guard !t.isEmpty else { throw ValueError("an empty value is not a duration", hint: "write a number and a unit (\(unitList)), \(example)") }
        let chars = Array(t.utf8)
        var i = 0
        var total: Int64 = 0
        while i < chars.count {
            var n: Int64 = 0
            let start = i
            while i < chars.count, chars[i] >= 0x30, chars[i] <= 0x39 {
                let (m, o1) = n.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(Int64(chars[i] - 0x30))
                guard !o1, !o2 else { throw ValueError("'\(text)' is too long a duration", hint: "use at most 36500d") }
                n = s
                i += 1
            }
            guard i > start else {
                throw ValueError("'\(text)' is not a duration", hint: "write a number and a unit (\(unitList)), \(example)")
            }
            var j = i
            while j < chars.count, (chars[j] >= 0x61 && chars[j] <= 0x7A) { j += 1 }
            let unit = String(decoding: chars[i..<j], as: UTF8.self)
            guard !unit.isEmpty || j < chars.count else {
                let digits = String(decoding: chars[start..<i], as: UTF8.self)
                throw ValueError("'\(text)' has no unit", hint: "add one of \(unitList), e.g. \(digits)s or \(digits)m")
            }
            guard !unit.isEmpty else {
                throw ValueError("'\(text)' is not a duration", hint: "write a number and a unit (\(unitList)) without spaces, \(example)")
            }
            guard let factor = units.first(where: { $0.suffix == unit })?.ms else {
                throw ValueError("unknown unit '\(unit)' in '\(text)'", hint: "use \(unitList), \(example)")
            }
            i = j
            let (v, o1) = n.multipliedReportingOverflow(by: factor)
            let (s, o2) = total.addingReportingOverflow(v)
            guard !o1, !o2, s <= maximumMs else { throw ValueError("'\(text)' is too long a duration", hint: "use at most 36500d") }
            total = s
        }
        guard total > 0 || allowZero else {
            throw ValueError("'\(text)' must be longer than zero", hint: allowForever ? "or write forever" : nil)
        }
        return total
    }

    /// Parses a duration that may not be `forever`.
    public static func parseFinite(_ text: some StringProtocol, allowZero: Bool = false) throws(ValueError) -> Int64 {
        // `parse` returns nil only for `forever`, which `allowForever: false` refuses.
        try parse(text, allowForever: false, allowZero: allowZero)!
    }

    /// The shortest exact text for `ms` that `parse` reads back (`7d`, `1h30m`, `1500ms`);
    /// `forever` for nil. Weeks are not used on output (`14d` reads better than `2w`).
    public static func format(ms: Int64?) -> String {
        guard let ms else { return "forever" }
        if ms <= 0 { return "0s" }
        var rest = ms, out = ""
        for (suffix, unit) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] where rest >= unit {
            if rest % 1000 != 0 && unit == 1000 { break }
            out += "\(rest / unit)\(suffix)"
            rest %= unit
        }
        if rest > 0 { out += "\(rest)ms" }
        return out
    }

    /// A remaining time as people read it, to the second: `1h02m03s`, `5m10s`, `42s`, `2d03h00m00s`.
    /// (What `session` and `explain` print; `parse` reads it back.)
    public static func remaining(seconds: Int64) -> String {
        let s = max(0, seconds)
        let d = s / 86_400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        if d > 0 { return "\(d)d\(two(h))h\(two(m))m\(two(sec))s" }
        if h > 0 { return "\(h)h\(two(m))m\(two(sec))s" }
        if m > 0 { return "\(m)m\(two(sec))s" }
        return "\(sec)s"
    }
}

extension Duration {
    /// Whole milliseconds.
    public var milliseconds: Int64 {
        let (s, a) = components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}
