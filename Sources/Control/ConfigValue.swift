import Packet

/// Parsers for config values. Each returns the value or a message saying what is wrong and a hint
/// saying what to write instead.
enum ConfigValue {
    /// A value error: the message and what to do.
    struct Problem: Error {
        var message: String
        var hint: String?
    }

    /// Durations: one or more `NUMBER UNIT` groups without spaces, units `ms`, `s`, `m`, `h`, `d`
    /// (`15m`, `1h30m`, `500ms`). A bare number is refused (which unit would it be?).
    static func duration(_ text: String) -> Result<Duration, Problem> {
        let bad = Problem(message: "'\(text)' is not a duration", hint: "write a number and a unit (ms, s, m, h, d), e.g. 15m or 1h30m")
        let chars = Array(text.utf8)
        guard !chars.isEmpty else { return .failure(bad) }
        var i = 0
        var totalMs: Int64 = 0
        while i < chars.count {
            var n: Int64 = 0
            let start = i
            while i < chars.count, chars[i] >= UInt8(ascii: "0"), chars[i] <= UInt8(ascii: "9") {
                let (m, o1) = n.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(Int64(chars[i] - UInt8(ascii: "0")))
                guard !o1, !o2 else { return .failure(Problem(message: "'\(text)' is too long a duration", hint: nil)) }
                n = s
                i += 1
            }
            guard i > start else { return .failure(bad) }
            guard i < chars.count else {
                return .failure(Problem(message: "'\(text)' has no unit", hint: "add one of ms, s, m, h, d, e.g. \(text)s or \(text)m"))
            }
            let factor: Int64
            if chars[i] == UInt8(ascii: "m"), i + 1 < chars.count, chars[i + 1] == UInt8(ascii: "s") {
                factor = 1; i += 2
            } else {
                switch chars[i] {
                case UInt8(ascii: "s"): factor = 1000
                case UInt8(ascii: "m"): factor = 60_000
                case UInt8(ascii: "h"): factor = 3_600_000
                case UInt8(ascii: "d"): factor = 86_400_000
                default: return .failure(bad)
                }
                i += 1
            }
            let (v, o1) = n.multipliedReportingOverflow(by: factor)
            let (t, o2) = totalMs.addingReportingOverflow(v)
            // Cap at 36500 days (100 years): anything longer is a typo.
            guard !o1, !o2, t <= 36500 * 86_400_000 else {
                return .failure(Problem(message: "'\(text)' is too long a duration", hint: "use at most 36500d"))
            }
            totalMs = t
        }
        return .success(.milliseconds(totalMs))
    }

    /// A UDP port 1...65535.
    static func port(_ text: String) -> Result<UInt16, Problem> {
        guard let p = Endpoint.parsePort(text), p != 0 else {
            return .failure(Problem(message: "'\(text)' is not a port", hint: "use a number from 1 to 65535"))
        }
        return .success(p)
    }

    /// A base64 WireGuard key.
    static func key(_ text: String, what: String) -> Result<WireGuardKey, Problem> {
        guard let k = WireGuardKey(base64: text) else {
            return .failure(Problem(
                message: "'\(abbreviate(text))' is not a key (base64 of 32 bytes, 44 characters)",
                hint: "generate one with `wg \(what)`"))
        }
        return .success(k)
    }

    /// Comma-separated list items, trimmed; empty items are reported.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmedSpaces() }
    }

    /// At most 20 characters of `text`, with an ellipsis (keys are secrets: don't echo them whole).
    static func abbreviate(_ text: String) -> String {
        text.count <= 20 ? text : String(text.prefix(8)) + "…"
    }
}
