import Core
/// Local-time arithmetic for `during` windows, without calendars: the data path passes a
/// minute-of-week (0 = Monday 00:00 local time … 10079 = Sunday 23:59), which the caller computes
/// once per tick from the epoch and the zone's UTC offset.
public enum PolicyClock {
    /// 7 × 24 × 60.
    public static let minutesPerWeek = 10_080

    /// Minute of the week for Unix time `epochSeconds` in a zone `utcOffsetSeconds` east of UTC.
    /// (1970-01-01 was a Thursday, day 3 when Monday is day 0.)
    @inlinable public static func minuteOfWeek(epochSeconds: Int64, utcOffsetSeconds: Int) -> Int {
        let localMinutes = (epochSeconds + Int64(utcOffsetSeconds)).floorDiv(60)
        return Int((localMinutes + 3 * 1440).floorMod(Int64(minutesPerWeek)))
    }

    /// Minute of the week of a civil local date and time (proleptic Gregorian), or nil if the date
    /// does not exist.
    public static func minuteOfWeek(year: Int, month: Int, day: Int, hour: Int, minute: Int) -> Int? {
        guard let days = daysFromCivil(year: year, month: month, day: day),
            (0...23).contains(hour), (0...59).contains(minute)
        else { return nil }
        let weekday = Int((Int64(days) + 3).floorMod(7))  // 0 = Monday
        return weekday * 1440 + hour * 60 + minute
    }

    /// Days since 1970-01-01 of a civil date, or nil when the date is invalid (H. Hinnant's algorithm).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int? {
        guard (1...12).contains(month), day >= 1 else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= lengths[month - 1] else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension Int64 {
    @usableFromInline func floorDiv(_ d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
    @usableFromInline func floorMod(_ d: Int64) -> Int64 {
        let r = self % d
        return r < 0 ? r + d : r
    }
}
