import Core
import Foundation
import Testing

/// The one duration, size and time text of the project: what the config file, the settings row
/// and every CLI option accept, and what every command prints.
@Suite struct DurationFormatTests {
    static let day: Int64 = 86_400_000

    @Test func everyUnitAndCombinations() throws {
        let cases: [(String, Int64)] = [
            ("250ms", 250), ("5s", 5000), ("15m", 900_000), ("2h", 7_200_000), ("1d", Self.day), ("2w", 14 * Self.day),
            ("1h30m", 5_400_000), ("1m30s500ms", 90_500), ("90s", 90_000), (" 3D ", 3 * Self.day), ("36500d", 36_500 * Self.day),
        ]
        for (text, ms) in cases { #expect(try DurationFormat.parse(text) == ms, "\(text)") }
    }

    @Test func refusesWhatIsNotADuration() {
        for bad in ["", "15", "m", "15x", "1.5h", "-5m", "15 m", "1h 30m", "99999999999999999999s", "36501d", "0s", "d", "7"] {
            #expect(throws: ValueError.self, "\(bad)") { try DurationFormat.parse(bad) }
        }
    }

    @Test func foreverOnlyWhereAllowed() throws {
        #expect(try DurationFormat.parse("forever", allowForever: true) == nil)
        #expect(try DurationFormat.parse("never", allowForever: true) == nil)
        #expect(throws: ValueError.self) { try DurationFormat.parse("forever") }
        #expect(try DurationFormat.parse("0s", allowZero: true) == 0)
    }

    @Test func errorsSayWhatToWrite() {
        do { _ = try DurationFormat.parse("15"); Issue.record("accepted") } catch {
            #expect(error.message == "'15' has no unit")
            #expect(error.hint == "add one of ms, s, m, h, d, w, e.g. 15s or 15m")
        }
        do { _ = try DurationFormat.parse("3x"); Issue.record("accepted") } catch {
            #expect(error.message.contains("unknown unit 'x'"))
        }
    }

    @Test func formatIsShortestExactAndReadsBack() throws {
        #expect(DurationFormat.format(ms: 7 * Self.day) == "7d")
        #expect(DurationFormat.format(ms: 5_400_000) == "1h30m")
        #expect(DurationFormat.format(ms: 1500) == "1500ms")
        #expect(DurationFormat.format(ms: 61_000) == "1m1s")
        #expect(DurationFormat.format(ms: nil) == "forever")
        var rng = SystemRandomNumberGenerator()
        for ms: Int64 in [1, 999, 1000, 61_000, 90_061_001, 7 * Self.day] + (0..<500).map({ _ in Int64.random(in: 1...DurationFormat.maximumMs, using: &rng) }) {
            #expect(try DurationFormat.parse(DurationFormat.format(ms: ms)) == ms)
        }
    }

    @Test func remainingTimeReadsBack() throws {
        #expect(DurationFormat.remaining(seconds: 42) == "42s")
        #expect(DurationFormat.remaining(seconds: 310) == "5m10s")
        #expect(DurationFormat.remaining(seconds: 3723) == "1h02m03s")
        #expect(DurationFormat.remaining(seconds: 2 * 86_400 + 3 * 3600) == "2d03h00m00s")
        for s: Int64 in [1, 59, 60, 3599, 3600, 86_399, 86_400, 1_000_000] {
            #expect(try DurationFormat.parse(DurationFormat.remaining(seconds: s)) == s * 1000)
        }
    }
}

@Suite struct SizeFormatTests {
    @Test func parses() throws {
        let cases: [(String, Int64?)] = [("2GiB", 2 << 30), ("500MB", 500_000_000), ("4096", 4096), ("1.5GiB", 3 << 29),
                                         ("10kB", 10_000), ("1 TiB", 1 << 40), ("unlimited", nil), ("3G", 3 << 30)]
        for (text, bytes) in cases { #expect(try SizeFormat.parse(text) == bytes, "\(text)") }
        for bad in ["", "GiB", "2XB", "0", "0.5B", "-1MB", "1e3"] {
            #expect(throws: ValueError.self, "\(bad)") { try SizeFormat.parse(bad) }
        }
        #expect(throws: ValueError.self) { try SizeFormat.parse("unlimited", allowUnlimited: false) }
    }

    @Test func formats() throws {
        #expect(SizeFormat.format(bytes: 2 << 30) == "2GiB")
        #expect(SizeFormat.format(bytes: 500_000_000) == "500MB")
        #expect(SizeFormat.format(bytes: 1234) == "1234B")
        #expect(SizeFormat.format(bytes: nil) == "unlimited")
        #expect(SizeFormat.approximate(bytes: 512) == "512 B")
        #expect(SizeFormat.approximate(bytes: 1536) == "1.5 KiB")
        #expect(SizeFormat.approximate(bytes: 2 << 30) == "2.0 GiB")
        for b: Int64 in [1, 1000, 1024, 123_456_789, 5 << 40] { #expect(try SizeFormat.parse(SizeFormat.format(bytes: b)) == b) }
    }
}

@Suite struct TimeTextTests {
    let utc = Zone.utc
    let paris = TimeTextTests.zoneFile("Europe/Paris")

    /// A zone from the system's tzdata (Runtime's `Zone.named` does this for the binaries).
    static func zoneFile(_ name: String) -> Zone {
        try! Zone(identifier: name, tzif: FileManager.default.contents(atPath: "/usr/share/zoneinfo/" + name)!)
    }

    @Test func isoAgreesWithFoundation() {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")!
        var rng = SystemRandomNumberGenerator()
        for ms: Int64 in [0, 1, 999, -1, -86_400_001, 951_782_400_000, 4_102_444_800_000]
            + (0..<2000).map({ _ in Int64.random(in: -2_000_000_000_000...253_402_300_799_000, using: &rng) })
        {
            #expect(TimeText.iso(ms) == f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)), "\(ms)")
            if ms >= 0 { #expect(TimeText.parseISO(TimeText.iso(ms)) == ms) }
        }
    }

    @Test func isoKnownAnswers() {
        #expect(TimeText.iso(0) == "1970-01-01T00:00:00.000Z")
        #expect(TimeText.iso(1_798_550_400_000) == "2026-12-29T13:20:00.000Z")  // checked with python3 datetime
        #expect(TimeText.iso(951_782_400_999) == "2000-02-29T00:00:00.999Z")
        #expect(TimeText.iso(-1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func localTextCarriesTheZone() {
        let ms: Int64 = 1_764_412_500_000  // 2025-11-29T10:35:00Z
        #expect(TimeText.local(ms, zone: utc) == "2025-11-29 10:35:00 UTC")
        #expect(TimeText.local(ms, zone: paris) == "2025-11-29 11:35:00 +01:00")
        #expect(TimeText.local(ms, zone: Self.zoneFile("Asia/Kolkata")) == "2025-11-29 16:05:00 +05:30")
        #expect(TimeText.clock(ms, zone: utc) == "10:35:00 UTC")
    }

    @Test func sinceTakesDurationsDatesAndForever() throws {
        let now: Int64 = 1_764_412_500_000
        #expect(try TimeText.since("10m", now: now, zone: utc) == now - 600_000)
        #expect(try TimeText.since("forever", now: now, zone: utc) == .min)
        #expect(try TimeText.since("2025-11-29", now: now, zone: utc) == 1_764_374_400_000)
        #expect(try TimeText.since("2025-11-29T10:00Z", now: now, zone: paris) == 1_764_410_400_000)
        #expect(try TimeText.since("2025-11-29 11:00", now: now, zone: paris) == 1_764_410_400_000)
        #expect(try TimeText.since("2025-11-29T10:00:00.250+01:00", now: now, zone: utc) == 1_764_406_800_250)
        for bad in ["2025-13-01", "2025-02-30", "2025-11-29T25:00", "yesterday", "10"] {
            #expect(throws: ValueError.self, "\(bad)") { try TimeText.since(bad, now: now, zone: utc) }
        }
    }
}

@Suite struct VocabularyTests {
    @Test func namesRoundTrip() throws {
        for v in Verdict.allCases { #expect(Verdict(name: v.name) == v) }
        #expect(Verdict(action: "pending") == nil)
        #expect(Verdict.actions == [.allow, .block, .reject])
        for d in Direction.allCases { #expect(Direction(name: d.name) == d) }
        for t in PeerTier.predefined { #expect(PeerTier(keyword: t.name) == t) }
        for p in IPProtocol.named { #expect(IPProtocol(name: p.name) == p) }
        #expect(IPProtocol(name: "proto-47") == IPProtocol(rawValue: 47))
        #expect(IPProtocol(rawValue: 47).name == "proto-47")
        #expect(IPProtocol(name: "tpc") == nil)
    }

    @Test func jsonUsesTheNames() throws {
        struct Row: Codable, Equatable { var v: Verdict; var d: Direction; var t: PeerTier; var p: IPProtocol; var c: CaptureDetail }
        let row = Row(v: .reject, d: .in, t: .premium, p: .icmpv6, c: .full)
        let data = try JSONEncoder().encode(row)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(object == ["v": "reject", "d": "in", "t": "premium", "p": "icmpv6", "c": "full"])
        #expect(try JSONDecoder().decode(Row.self, from: data) == row)
    }

    @Test func endpointsHaveOneParser() {
        #expect(Endpoint("10.0.0.1:51820") == Endpoint(address: IPAddress("10.0.0.1")!, port: 51820))
        #expect(Endpoint("[fd00::1]:51820")?.description == "[fd00::1]:51820")
        #expect(Endpoint("vpn.example.com:51820") == nil)
        #expect(HostPort("vpn.example.com:51820") == HostPort(host: "vpn.example.com", port: 51820))
        for bad in ["10.0.0.1", "10.0.0.1:0", "10.0.0.1:65536", "fd00::1:51820", "[10.0.0.1]:1", ":1", "[fd00::1]51820"] {
            #expect(HostPort(bad) == nil, "\(bad)")
        }
    }

    @Test func keysUseOneBase64() {
        let bytes = (0..<32).map { UInt8($0 * 7 & 0xFF) }
        let k = WireGuardKey(bytes: bytes)!
        #expect(k.base64.count == 44)
        #expect(WireGuardKey(base64: k.base64) == k)
        #expect(WireGuardKey(hex: k.hex) == k)
        #expect(WireGuardKey(base64: String(k.base64.dropLast())) == nil)
        // RFC 4648 §10 style check on a known key text.
        #expect(WireGuardKey(bytes: [UInt8](repeating: 0, count: 32))!.base64 == "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    }

    @Test func didYouMean() {
        #expect(DidYouMean.closest("prot", among: ["proto", "port", "peer"]) == "port" || DidYouMean.closest("prot", among: ["proto", "port", "peer"]) == "proto")
        #expect(DidYouMean.closest("tpc", among: ["tcp", "udp"]) == "tcp")
        #expect(DidYouMean.closest("zz", among: ["tcp", "udp"]) == nil)
        #expect(DidYouMean.suffix("flows", ["flows"]) == "")
        #expect(DidYouMean.suffix("flow", ["flows", "refusals"]) == ", did you mean 'flows'?")
    }

    @Test func ipv4MappedPrintsDotted() {
        #expect(IPAddress("::ffff:10.0.0.1")?.description == "::ffff:10.0.0.1")
        #expect(IPAddress("::ffff:a00:1")?.description == "::ffff:10.0.0.1")
    }
}
