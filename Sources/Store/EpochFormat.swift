/// UTC text for the store's epoch-millisecond times, for messages a person reads.
import Core
enum EpochFormat {
    /// `2026-11-29T11:57:33Z` (RFC 3339, UTC, seconds precision).
    static func iso8601(_ ms: Int64) -> String {
        let secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let days = secs >= 0 ? secs / 86_400 : (secs - 86_399) / 86_400
        let rem = secs - days * 86_400
        // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))T\(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60))Z"
    }
}
