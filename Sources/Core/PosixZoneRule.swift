/// A POSIX `TZ` rule (POSIX.1-2017 §8.3, with RFC 8536 §3.3's extensions: hours up to ±167 in
/// transition times): `std offset [dst [offset] [,start[/time],end[/time]]]`, e.g.
/// `CET-1CEST,M3.5.0,M10.5.0/3`. The footer of a TZif file says with one of these what happens
/// after its last transition; the `TZ` variable may hold one directly.
public struct PosixZoneRule: Sendable, Equatable {
    /// Seconds east of UTC outside daylight saving time (POSIX writes the opposite sign: `CET-1`).
    public let standardOffset: Int32
    /// Daylight saving time, when the rule has it.
    public let dst: DaylightSaving?

    /// The daylight-saving part: its offset and the local times it starts and ends each year.
    public struct DaylightSaving: Sendable, Equatable {
        /// Seconds east of UTC during daylight saving time.
        public let offset: Int32
        /// Starts at `start` local standard time, ends at `end` local daylight time.
        public let start: Transition
        public let end: Transition
    }

    /// A day of the year and a time of that day (seconds, may be negative or past 24 h).
    public struct Transition: Sendable, Equatable {
        public enum Day: Sendable, Equatable {
            /// `Jn`: day 1…365, February 29 never counted.
            case julian(Int)
            /// `n`: day 0…365, February 29 counted in leap years.
            case zeroBased(Int)
            /// `Mm.w.d`: weekday d (0 = Sunday) of week w (1…5, 5 = the last) of month m.
            case monthWeekDay(month: Int, week: Int, weekday: Int)
        }
        public let day: Day
        public let seconds: Int
    }

    /// Parses the rule text; a clear error for anything else.
    public init(parsing text: some StringProtocol) throws(ValueError) {
        var p = Cursor(Array(text.utf8))
        func bad(_ what: String) -> ValueError {
            ValueError("'\(text)' is not a POSIX TZ rule (\(what))", hint: "write e.g. CET-1CEST,M3.5.0,M10.5.0/3")
        }
        guard p.name() else { throw bad("no standard-time name") }
        guard let std = p.hms(maxHours: 24) else { throw bad("no offset after the standard-time name") }
        standardOffset = Int32(-std)
        if p.atEnd {
            dst = nil
            return
        }
        guard p.name() else { throw bad("unexpected text after the offset") }
        var dstOffset = Int32(-std + 3600)
        if let o = p.hms(maxHours: 24) { dstOffset = Int32(-o) }
        let start: Transition, end: Transition
        if p.atEnd {
            // No dates given: POSIX leaves them to the implementation; glibc uses the US rules.
            start = Transition(day: .monthWeekDay(month: 3, week: 2, weekday: 0), seconds: 7200)
            end = Transition(day: .monthWeekDay(month: 11, week: 1, weekday: 0), seconds: 7200)
        } else {
            guard p.take(UInt8(ascii: ",")), let s = p.transition() else { throw bad("no start date") }
            guard p.take(UInt8(ascii: ",")), let e = p.transition() else { throw bad("no end date") }
            guard p.atEnd else { throw bad("unexpected text after the end date") }
            start = s
            end = e
        }
        dst = DaylightSaving(offset: dstOffset, start: start, end: end)
    }

    /// The offset in force at `seconds` (Unix time).
    public func offset(at seconds: Int64) -> Int32 {
        guard let dst else { return standardOffset }
        // The year of the instant in local standard time; the rule's transitions of that year.
        let (days, _) = TimeText.floorDivMod(seconds + Int64(standardOffset), 86_400)
        let year = Int(TimeText.civil(fromDays: days).0)
        let start = dst.start.utcSeconds(year: year, offset: standardOffset)
        let end = dst.end.utcSeconds(year: year, offset: dst.offset)
        let inDST = start < end ? (seconds >= start && seconds < end) : (seconds < end || seconds >= start)
        return inDST ? dst.offset : standardOffset
    }
}

extension PosixZoneRule.Transition {
    /// The instant (Unix seconds) of this transition in `year`, its time read at `offset`.
    func utcSeconds(year: Int, offset: Int32) -> Int64 {
        let jan1 = TimeText.days(fromCivil: year, m: 1, d: 1)
        let leap = TimeText.daysIn(month: 2, year: year) == 29
        let day: Int64
        switch self.day {
        case .julian(let n): day = jan1 + Int64(n - 1) + (leap && n >= 60 ? 1 : 0)
        case .zeroBased(let n): day = jan1 + Int64(n)
        case .monthWeekDay(let m, let w, let d):
            let first = TimeText.days(fromCivil: year, m: m, d: 1)
            let firstWeekday = Int(TimeText.floorDivMod(first + 4, 7).1)  // 1970-01-01 was a Thursday
            var dom = 1 + (d - firstWeekday + 7) % 7 + (w - 1) * 7
            while dom > TimeText.daysIn(month: m, year: year) { dom -= 7 }
            day = first + Int64(dom - 1)
        }
        return day * 86_400 + Int64(seconds) - Int64(offset)
    }
}

/// A reader over the rule's bytes.
private struct Cursor {
    let b: [UInt8]
    var i = 0
    init(_ b: [UInt8]) { self.b = b }
    var atEnd: Bool { i == b.count }
    var peek: UInt8? { i < b.count ? b[i] : nil }

    mutating func take(_ c: UInt8) -> Bool {
        guard peek == c else { return false }
        i += 1
        return true
    }

    /// A zone name: 3 or more letters, or `<…>` of 3 or more letters, digits, `+`, `-`.
    mutating func name() -> Bool {
        if take(UInt8(ascii: "<")) {
            let from = i
            while let c = peek, c != UInt8(ascii: ">") {
                guard isAlnum(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") else { return false }
                i += 1
            }
            guard i - from >= 3, take(UInt8(ascii: ">")) else { return false }
            return true
        }
        let from = i
        while let c = peek, isAlpha(c) { i += 1 }
        return i - from >= 3
    }

    /// `[+-]hh[:mm[:ss]]` in seconds, hours at most `maxHours`.
    mutating func hms(maxHours: Int) -> Int? {
        let save = i
        var sign = 1
        if take(UInt8(ascii: "-")) { sign = -1 } else { _ = take(UInt8(ascii: "+")) }
        guard let h = number(maxDigits: 3), h <= maxHours else { i = save; return nil }
        var total = h * 3600
        for scale in [60, 1] {
            guard take(UInt8(ascii: ":")) else { break }
            guard let v = number(maxDigits: 2), v <= 59 else { i = save; return nil }
            total += v * scale
        }
        return sign * total
    }

    /// `Jn`, `n` or `Mm.w.d`, then an optional `/time` (default 02:00).
    mutating func transition() -> PosixZoneRule.Transition? {
        let day: PosixZoneRule.Transition.Day
        if take(UInt8(ascii: "J")) {
            guard let n = number(maxDigits: 3), (1...365).contains(n) else { return nil }
            day = .julian(n)
        } else if take(UInt8(ascii: "M")) {
            guard let m = number(maxDigits: 2), (1...12).contains(m), take(UInt8(ascii: ".")),
                  let w = number(maxDigits: 1), (1...5).contains(w), take(UInt8(ascii: ".")),
                  let d = number(maxDigits: 1), (0...6).contains(d) else { return nil }
            day = .monthWeekDay(month: m, week: w, weekday: d)
        } else {
            guard let n = number(maxDigits: 3), (0...365).contains(n) else { return nil }
            day = .zeroBased(n)
        }
        var seconds = 7200
        if take(UInt8(ascii: "/")) {
            guard let t = hms(maxHours: 167) else { return nil }
            seconds = t
        }
        return PosixZoneRule.Transition(day: day, seconds: seconds)
    }

    mutating func number(maxDigits: Int) -> Int? {
        var v = 0, n = 0
        while let c = peek, c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9"), n < maxDigits {
            v = v * 10 + Int(c - UInt8(ascii: "0"))
            n += 1
            i += 1
        }
        return n > 0 ? v : nil
    }

    func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
    func isAlnum(_ c: UInt8) -> Bool { isAlpha(c) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) }
}
