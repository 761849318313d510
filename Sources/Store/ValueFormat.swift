/// Parsing and formatting of the human units used in settings: durations (`7d`, `12h`,
/// `1h30m`, `500ms`) and byte sizes (`2GiB`, `500MB`, `4096`). `forever` / `unlimited` mean
/// "no limit" and parse to nil.
public enum ValueFormat {
    static let durationUnits: [(suffix: String, ms: Int64)] = [
        ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 604_800_000),
    ]
    static let sizeUnits: [(suffix: String, bytes: Int64)] = [
        ("b", 1), ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("tb", 1_000_000_000_000),
        ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("tib", 1 << 40), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30),
    ]

    /// Milliseconds for `text` (`7d`, `12h`, `1h30m`, `45s`, `500ms`, `2w`); nil for `forever`.
    /// Throws with a message naming the accepted units.
    public static func parseDuration(_ text: String) throws -> Int64? {
        let t = text.trimmingSpaces.lowercased()
        if t == "forever" || t == "never" { return nil }
        let hint = "expected a duration like 30m, 12h, 7d, 1h30m (units ms s m h d w) or 'forever'"
        guard !t.isEmpty else { throw SettingValueError(value: text, message: hint) }
        var total: Int64 = 0
        var rest = Substring(t)
        while !rest.isEmpty {
            let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
            guard !digits.isEmpty, let n = Int64(digits) else { throw SettingValueError(value: text, message: hint) }
            rest = rest.dropFirst(digits.count)
            let unit = rest.prefix(while: { $0.isASCII && $0.isLetter })
            guard let u = durationUnits.first(where: { $0.suffix == unit }) else {
                let m = unit.isEmpty ? "a number needs a unit (ms s m h d w)" : "unknown unit '\(unit)' (use ms s m h d w)"
                throw SettingValueError(value: text, message: "\(m); \(hint)")
            }
            rest = rest.dropFirst(unit.count)
            let (p, o1) = n.multipliedReportingOverflow(by: u.ms)
            let (s, o2) = total.addingReportingOverflow(p)
            guard !o1, !o2 else { throw SettingValueError(value: text, message: "duration is too long") }
            total = s
        }
        guard total > 0 else { throw SettingValueError(value: text, message: "must be longer than zero (or 'forever')") }
        return total
    }

    /// The shortest exact text for `ms` (`7d`, `1h30m`, `1500ms`); `forever` for nil.
    public static func formatDuration(_ ms: Int64?) -> String {
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

    /// Bytes for `text` (`2GiB`, `500MB`, `1.5GiB`, `4096`); nil for `unlimited`. Decimal units
    /// (kB MB GB TB) are powers of 1000, binary ones (KiB MiB GiB TiB, and bare K M G) of 1024.
    public static func parseSize(_ text: String) throws -> Int64? {
        let t = text.trimmingSpaces.lowercased()
        if t == "unlimited" || t == "forever" || t == "none" { return nil }
        let hint = "expected a size like 500MB, 2GiB, 1048576 (units B kB MB GB TB KiB MiB GiB TiB) or 'unlimited'"
        let number = t.prefix(while: { ($0.isASCII && $0.isNumber) || $0 == "." })
        let unit = t.dropFirst(number.count).trimmingSpaces
        guard !number.isEmpty, let value = Double(number) else { throw SettingValueError(value: text, message: hint) }
        let multiplier: Int64
        if unit.isEmpty { multiplier = 1 } else if let u = sizeUnits.first(where: { $0.suffix == unit }) { multiplier = u.bytes } else {
            throw SettingValueError(value: text, message: "unknown unit '\(unit)'; \(hint)")
        }
        let bytes = value * Double(multiplier)
        guard bytes >= 1, bytes < 9.0e18 else { throw SettingValueError(value: text, message: "must be between 1 byte and 8 EiB (or 'unlimited')") }
        guard bytes == bytes.rounded(.down) else { throw SettingValueError(value: text, message: "is not a whole number of bytes") }
        return Int64(bytes)
    }

    /// The shortest exact text for `bytes` (`2GiB`, `500MB`, `123B`); `unlimited` for nil.
    public static func formatSize(_ bytes: Int64?) -> String {
        guard let bytes else { return "unlimited" }
        // The exact unit giving the smallest number (2GB stays 2GB, not 1953125KiB); binary first on a tie.
        var best = (text: "\(bytes)B", value: bytes)
        for (suffix, unit) in [("TiB", Int64(1) << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10),
                               ("TB", 1_000_000_000_000), ("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1000)]
        where bytes >= unit && bytes % unit == 0 && bytes / unit < best.value {
            best = ("\(bytes / unit)\(suffix)", bytes / unit)
        }
        return best.text
    }
}

extension StringProtocol {
    var trimmingSpaces: Substring {
        let s = self[...].drop(while: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
        var e = s.endIndex
        while e > s.startIndex, let c = Optional(s[s.index(before: e)]), c == " " || c == "\t" || c == "\n" || c == "\r" {
            e = s.index(before: e)
        }
        return Substring(s[s.startIndex..<e])
    }
}
