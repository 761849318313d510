import Core
import Foundation
import Testing

@testable import Runtime

/// `Zone` (TZif files and POSIX rules, no ICU) against Foundation's ICU-backed `TimeZone` and
/// `DateFormatter`, which the binaries used before and which the tests still link.
@Suite struct ZoneTests {
    static let zones = ["Europe/Paris", "Europe/London", "America/New_York", "America/Sao_Paulo", "Asia/Kolkata",
                        "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kathmandu", "America/St_Johns", "Etc/GMT+5"]

    /// Same offsets as ICU at random instants 2000–2099 (before and after the files' last
    /// transition in 2037, where the footer's rule takes over) and at every hour around this
    /// year's transitions.
    @Test func offsetsAgreeWithICU() throws {
        var rng = SystemRandomNumberGenerator()
        for name in Self.zones {
            let zone = try #require(Zone.named(name), "\(name)")
            let icu = try #require(TimeZone(identifier: name))
            var instants = (0..<3000).map { _ in Int64.random(in: 946_684_800_000...4_102_444_799_000, using: &rng) }
            instants += stride(from: Int64(1_767_225_600_000), to: 1_798_761_600_000, by: 3_600_000).map { $0 }  // 2026, hourly
            for ms in instants {
                let expected = icu.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000))
                #expect(zone.secondsEastOfUTC(atMs: ms) == expected, "\(name) at \(TimeText.iso(ms))")
            }
        }
    }

    /// The wall-clock text is what DateFormatter wrote (en_US_POSIX, the same patterns).
    @Test func localTextAgreesWithDateFormatter() throws {
        var rng = SystemRandomNumberGenerator()
        for name in ["Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC"] {
            let zone = try #require(Zone.named(name))
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: name)
            f.dateFormat = "yyyy-MM-dd HH:mm:ss"
            for _ in 0..<2000 {
                let ms = Int64.random(in: 0...4_102_444_799_999, using: &rng)
                let text = TimeText.local(ms, zone: zone)
                #expect(text.hasPrefix(f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)) + " "), "\(name) \(ms): \(text)")
            }
        }
    }

    @Test func utcNamesAndNumericOffsets() throws {
        let ms: Int64 = 1_764_412_500_000  // 2025-11-29T10:35:00Z
        for name in ["UTC", "Etc/UTC", "GMT", "Zulu"] {
            let z = try #require(Zone.named(name))
            #expect(TimeText.local(ms, zone: z) == "2025-11-29 10:35:00 UTC", "\(name)")
        }
        #expect(TimeText.local(ms, zone: try #require(Zone.named("Europe/London"))) == "2025-11-29 10:35:00 +00:00")
        #expect(TimeText.local(ms, zone: try #require(Zone.named("America/New_York"))) == "2025-11-29 05:35:00 -05:00")
        #expect(TimeText.clock(1_751_279_400_000, zone: try #require(Zone.named("Europe/Paris"))) == "12:30:00 +02:00")  // 2025-06-30T10:30Z
    }

    @Test func namesThatAreNotZones() {
        for bad in ["", "../../etc/passwd", "/etc/localtime", "Europe//Paris", "Europe/../Paris", "No/Such_Zone", "Europe", "Europe/Paris "] {
            #expect(Zone.named(bad) == nil, "\(bad)")
        }
    }

    @Test func posixRules() throws {
        let us = try Zone(identifier: "x", posixRule: "EST5EDT,M3.2.0,M11.1.0")
        #expect(us.secondsEastOfUTC(atMs: 1_764_412_500_000) == -5 * 3600)  // November
        #expect(us.secondsEastOfUTC(atMs: 1_751_279_400_000) == -4 * 3600)  // June
        // 2026-03-08 is the second Sunday of March: 02:00 EST = 07:00Z.
        #expect(us.secondsEastOfUTC(atMs: 1_772_953_199_000) == -5 * 3600)
        #expect(us.secondsEastOfUTC(atMs: 1_772_953_200_000) == -4 * 3600)
        let south = try Zone(identifier: "x", posixRule: "<-03>3<-02>,M9.1.0/0,M4.1.0/0")  // southern: DST across new year
        #expect(south.secondsEastOfUTC(atMs: 1_767_225_600_000) == -2 * 3600)  // 1 January
        #expect(south.secondsEastOfUTC(atMs: 1_751_279_400_000) == -3 * 3600)  // June
        #expect(try Zone(identifier: "x", posixRule: "<+0530>-5:30").secondsEastOfUTC(atMs: 0) == 19_800)
        #expect(try Zone(identifier: "x", posixRule: "EST5EDT").secondsEastOfUTC(atMs: 1_751_279_400_000) == -4 * 3600, "no dates: glibc's US rules")
        #expect(try Zone(identifier: "x", posixRule: "XXX3YYY,J60/25,300/-1").secondsEastOfUTC(atMs: 0) == -3 * 3600)
        for bad in ["", "CET", "CE-1", "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0", "CET-1CEST,M3.5.0,M10.5.0/200", "<A>1", "CET-25", "CET-1 "] {
            #expect(throws: ValueError.self, "\(bad)") { try Zone(identifier: "x", posixRule: bad) }
        }
    }

    @Test func tzifErrorsAreErrors() throws {
        let good = Array(try #require(FileManager.default.contents(atPath: "/usr/share/zoneinfo/Europe/Paris")))
        #expect(throws: ValueError.self) { try Zone(identifier: "x", tzif: [UInt8]()) }
        #expect(throws: ValueError.self) { try Zone(identifier: "x", tzif: Array("not a zone".utf8)) }
        // Every truncation is refused or gives a zone; none traps.
        var parsed = 0
        for n in stride(from: 0, to: good.count, by: 7) where (try? Zone(identifier: "x", tzif: good[0..<n])) != nil { parsed += 1 }
        #expect(parsed == 0, "a truncated file parsed")
        #expect(try Zone(identifier: "Europe/Paris", tzif: good) == Zone.named("Europe/Paris"))
    }
}
