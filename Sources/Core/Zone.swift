/// A time zone as text output needs it: the offset from UTC at an instant. Built from a TZif file
/// (RFC 8536; `/usr/share/zoneinfo/NAME`, read by Runtime's `Zone.named` / `Zone.system`), a
/// POSIX `TZ` rule (`CET-1CEST,M3.5.0,M10.5.0/3`) or a fixed offset.
///
/// Why not Foundation's `TimeZone`: outside Apple platforms it knows named zones only through ICU
/// (FoundationInternationalization), whose data alone is 34 MB; the packaged binaries link
/// FoundationEssentials only, where `TimeZone(identifier: "Europe/Paris")` is nil. The system's
/// tzdata is what `date` and the journal use, so the offsets are the ones the operator sees there.
public struct Zone: Sendable, Equatable, CustomStringConvertible {
    /// The name it was loaded by (`Europe/Paris`, `UTC`, the `TZ` text); `UTC`-family names print
    /// as `UTC` (``TimeText/zoneName(_:zone:)``).
    public let identifier: String
    /// Instants (Unix seconds, ascending) at which the offset changes, and the offset (seconds east
    /// of UTC) in force from each on.
    let transitions: [Int64]
    let offsets: [Int32]
    /// The offset before the first transition (or always, when there are none and no rule).
    let initialOffset: Int32
    /// What applies after the last transition (a TZif footer or a `TZ` rule); nil: the last offset.
    let rule: PosixZoneRule?

    init(identifier: String, transitions: [Int64], offsets: [Int32], initialOffset: Int32, rule: PosixZoneRule?) {
        self.identifier = identifier
        self.transitions = transitions
        self.offsets = offsets
        self.initialOffset = initialOffset
        self.rule = rule
    }

    /// UTC.
    public static let utc = Zone(identifier: "UTC", secondsEastOfUTC: 0)

    /// The names that mean UTC itself (not a zone that happens to be at offset 0 now).
    public static let utcNames: Set<String> = ["UTC", "GMT", "Etc/UTC", "Etc/GMT", "Universal", "Zulu", "Etc/Universal", "Etc/Zulu",
                                               "UCT", "Etc/UCT", "GMT0", "Etc/GMT0", "GMT+0", "GMT-0", "Etc/GMT+0", "Etc/GMT-0", "Greenwich", "Etc/Greenwich"]

    /// A zone always `seconds` east of UTC.
    public init(identifier: String, secondsEastOfUTC seconds: Int) {
        self.init(identifier: identifier, transitions: [], offsets: [], initialOffset: Int32(clamping: seconds), rule: nil)
    }

    /// The zone a POSIX `TZ` rule describes (`EST5EDT,M3.2.0,M11.1.0`, `<+0530>-5:30`).
    public init(identifier: String, posixRule text: some StringProtocol) throws(ValueError) {
        let rule = try PosixZoneRule(parsing: text)
        self.init(identifier: identifier, transitions: [], offsets: [], initialOffset: rule.standardOffset, rule: rule)
    }

    /// Seconds east of UTC at `ms` (Unix epoch milliseconds).
    public func secondsEastOfUTC(atMs ms: Int64) -> Int {
        let (s, _) = TimeText.floorDivMod(ms, 1000)
        guard let last = transitions.last, s >= transitions[0] else {
            if transitions.isEmpty, let rule { return Int(rule.offset(at: s)) }
            return Int(initialOffset)
        }
        if s >= last, let rule { return Int(rule.offset(at: s)) }
        // The last transition at or before s.
        var lo = 0, hi = transitions.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if transitions[mid] <= s { lo = mid } else { hi = mid - 1 }
        }
        return Int(offsets[lo])
    }

    public var description: String { identifier }
}
