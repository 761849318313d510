// libFuzzer harness for time zones (Sources/Core/Zone+TZif.swift, PosixZoneRule.swift): the input
// is read both as a TZif file and as a POSIX TZ rule. Either gives a zone or a ValueError, never a
// trap; a zone answers an offset within ±26 h at any instant, and a rule's own zone agrees with
// itself before and after its year's transitions. Build and run with fuzz/tzif/run.sh.
import Core

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let instants: [Int64] = [.min, -62_135_596_800_000, -1, 0, 1_764_412_500_000, 2_147_483_648_000, 4_102_444_800_000, .max]
    if let zone = try? Zone(identifier: "fuzz", tzif: bytes) {
        for ms in instants { check(zone.secondsEastOfUTC(atMs: ms), zone) }
        _ = TimeText.local(1_764_412_500_000, zone: zone)
        _ = TimeText.parseDate("2025-11-29 11:00", zone: zone)
    }
    if let zone = try? Zone(identifier: "fuzz", posixRule: String(decoding: bytes, as: UTF8.self)) {
        for ms in instants { check(zone.secondsEastOfUTC(atMs: ms), zone) }
    }
    return 0
}

func check(_ offset: Int, _ zone: Zone) {
    precondition(abs(offset) <= 26 * 3600, "offset \(offset) s from \(zone.identifier)")
}
