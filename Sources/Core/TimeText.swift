/// The one place times become text and text becomes times (Unix epoch milliseconds, UTC):
/// `--json` writes ISO 8601 UTC with milliseconds (`2026-11-29T10:15:00.000Z`); text output writes
/// local time **with the zone** (`2026-11-29 11:15:00 +01:00`, in a ``Zone``); `--since` and `at` take a duration
/// back from now or a date.
public enum TimeText {
    /// ISO 8601 UTC with milliseconds: `2026-11-29T10:15:00.000Z`. Computed without a formatter
    /// (proleptic Gregorian calendar, civil-from-days), so it is exact and allocation-light.
    public static func iso(_ ms: Int64) -> String {
        let (days, msOfDay) = floorDivMod(ms, 86_400_000)
        let (y, m, d) = civil(fromDays: days)
        let h = msOfDay / 3_600_000, mi = msOfDay / 60_000 % 60, s = msOfDay / 1000 % 60, frac = msOfDay % 1000
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(frac, 3))Z"
    }

    /// Parses what `iso` writes (also without milliseconds, and with `+HH:MM` offsets); nil otherwise.
    public static func parseISO(_ text: some StringProtocol) -> Int64? {
        parseDate(String(text), zone: .utc, requireZone: true)
    }

    /// `2026-11-29 11:15:00 +01:00` in `zone` (`UTC` for UTC).
    public static func local(_ ms: Int64, zone: Zone) -> String {
        formatted(ms, withDate: true, zone) + " " + zoneName(ms, zone: zone)
    }

    /// `11:15:00 +01:00` in `zone` (for times within the day of the message).
    public static func clock(_ ms: Int64, zone: Zone) -> String {
        formatted(ms, withDate: false, zone) + " " + zoneName(ms, zone: zone)
    }

    /// The zone at `ms` as text prints it: `UTC` for a zone named as UTC, else the offset
    /// (`+01:00`, `+05:30`, `-05:00`), which never misleads (letter abbreviations do: IST is India,
    /// Ireland and Israel; CST China and the US) and reads the same in every locale.
    public static func zoneName(_ ms: Int64, zone: Zone) -> String {
        let offset = zone.secondsEastOfUTC(atMs: ms)
        if offset == 0, Zone.utcNames.contains(zone.identifier) { return "UTC" }
        let m = abs(offset) / 60
        return (offset < 0 ? "-" : "+") + pad(Int64(m / 60), 2) + ":" + pad(Int64(m % 60), 2)
    }

    /// What `--since` (and every "from when" option) takes: a duration back from `now` (`10m`,
    /// `1h30m`, `7d`), `forever` (returns `Int64.min`: everything), or a date
    /// `YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z|±HH:MM]` (a space may replace `T`) in `zone` unless it
    /// names its own.
    public static func since(_ text: some StringProtocol, now: Int64, zone: Zone) throws(ValueError) -> Int64 {
        let t = String(text).trimmedSpaces()
        if let first = t.first, first.isNumber, t.contains("-") {
            guard let ms = parseDate(t, zone: zone, requireZone: false) else {
                throw ValueError("'\(text)' is not a date", hint: "write a duration (10m, 1h, 7d) or a date YYYY-MM-DD[THH:MM[:SS]][Z]")
            }
            return ms
        }
        do {
            guard let ms = try DurationFormat.parse(t, allowForever: true) else { return .min }
            return now &- ms
        } catch {
            throw ValueError(error.message, hint: "write a duration (10m, 1h, 7d), forever, or a date YYYY-MM-DD[THH:MM[:SS]][Z]")
        }
    }

    /// A date `YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z|±HH:MM]` → epoch ms, read in `zone` when it names no zone.
    public static func parseDate(_ text: String, zone: Zone, requireZone: Bool = false) -> Int64? {
        var s = Substring(text)
        var offsetMs: Int64?
        if s.hasSuffix("Z") || s.hasSuffix("z") {
            offsetMs = 0
            s = s.dropLast()
        } else if s.count > 6, let signIdx = s.index(s.endIndex, offsetBy: -6, limitedBy: s.startIndex),
                  s[signIdx] == "+" || s[signIdx] == "-", s[s.index(signIdx, offsetBy: 3)] == ":",
                  s[..<signIdx].contains("T") || s[..<signIdx].contains(" ")
        {
            let hh = Int(s[s.index(after: signIdx)..<s.index(signIdx, offsetBy: 3)])
            let mm = Int(s[s.index(signIdx, offsetBy: 4)...])
            guard let hh, let mm, hh < 24, mm < 60 else { return nil }
            offsetMs = Int64(hh * 3600 + mm * 60) * 1000 * (s[signIdx] == "-" ? -1 : 1)
            s = s[..<signIdx]
        }
        if requireZone && offsetMs == nil { return nil }
        let parts = s.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: { $0 == "T" || $0 == " " })
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3, date[0].count == 4, date.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) }),
              let y = Int(date[0]), let mo = Int(date[1]), let d = Int(date[2]),
              (1970...9999).contains(y), (1...12).contains(mo), (1...daysIn(month: mo, year: y)).contains(d) else { return nil }
        var h = 0, mi = 0, sec = 0, frac = 0
        if parts.count == 2 {
            var timeText = parts[1]
            if let dot = timeText.firstIndex(of: ".") {
                let f = timeText[timeText.index(after: dot)...]
                guard (1...3).contains(f.count), let fv = Int(f), f.allSatisfy(\.isASCII) else { return nil }
                frac = fv * [1, 100, 10, 1][f.count]
                timeText = timeText[..<dot]
            }
            let time = timeText.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
            guard (2...3).contains(time.count), let hh = time[0], let mm = time[1], (0...23).contains(hh), (0...59).contains(mm)
            else { return nil }
            h = hh
            mi = mm
            if time.count == 3 {
                guard let ss = time[2], (0...59).contains(ss) else { return nil }
                sec = ss
            }
        }
        let civilMs = (days(fromCivil: y, m: mo, d: d) * 86_400 + Int64(h * 3600 + mi * 60 + sec)) * 1000 + Int64(frac)
        if let offsetMs { return civilMs - offsetMs }
        // A local time: its zone offset at (about) that instant, corrected once for a DST edge.
        var guess = civilMs - Int64(zone.secondsEastOfUTC(atMs: civilMs)) * 1000
        guess = civilMs - Int64(zone.secondsEastOfUTC(atMs: guess)) * 1000
        return guess
    }

    // MARK: - Calendar arithmetic (Howard Hinnant's civil_from_days / days_from_civil)

    /// Floored division and its remainder (0 ≤ r < b) for b > 0; safe for `Int64.min`.
    static func floorDivMod(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    static func days(fromCivil y0: Int, m: Int, d: Int) -> Int64 {
        let y = Int64(m <= 2 ? y0 - 1 : y0)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64(m > 2 ? m - 3 : m + 9)
        let doy = (153 * mp + 2) / 5 + Int64(d) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func daysIn(month m: Int, year y: Int) -> Int {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// `v` with a leading zero below 10 (`07`), as clock text writes hours, minutes and seconds.
    public static func twoDigits(_ v: Int) -> String { pad(Int64(v), 2) }

    static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// The wall-clock parts of `ms` in `zone`: `yyyy-MM-dd HH:mm:ss` or `HH:mm:ss` (proleptic
    /// Gregorian calendar, whole seconds: the milliseconds are dropped, not rounded).
    private static func formatted(_ ms: Int64, withDate: Bool, _ zone: Zone) -> String {
        let (s, _) = floorDivMod(ms, 1000)
        let (days, secOfDay) = floorDivMod(s + Int64(zone.secondsEastOfUTC(atMs: ms)), 86_400)
        let clock = "\(pad(secOfDay / 3600, 2)):\(pad(secOfDay / 60 % 60, 2)):\(pad(secOfDay % 60, 2))"
        guard withDate else { return clock }
        let (y, m, d) = civil(fromDays: days)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2)) " + clock
    }
}
