/// Records for checking a ring end to end (tests and `tunnelbench ring`): every field is derived
/// from a sequence number and `detail2` holds a checksum of all the others, so a reader detects a
/// torn record (fields from two different writes), a reordered one, or a corrupted one.
public enum RingSelfTest {
    /// The record for sequence number `sequence` (carried in `flowID`).
    @inline(__always)
    public static func record(sequence: UInt64) -> LiveRecord {
        var r = LiveRecord()
        r.flowID = sequence
        r.timeNanoseconds = sequence &* 1_000_003
        r.kind = LiveEventKind(rawValue: UInt8(truncatingIfNeeded: sequence % 5))
        r.direction = LiveDirection(rawValue: UInt8(truncatingIfNeeded: sequence & 1))
        r.ipProtocol = sequence & 2 == 0 ? 6 : 17
        r.ipVersion = sequence & 4 == 0 ? 4 : 6
        let mixed = mix(sequence)
        if r.ipVersion == 6 {
            r.sourceHigh = 0xFD99_0000_0000_0000 | (mixed >> 16)
            r.sourceLow = mixed
            r.destinationHigh = ~mixed
            r.destinationLow = mixed &* 3
        } else {
            r.sourceLow = mixed & 0xFFFF_FFFF
            r.destinationLow = mixed >> 32
        }
        r.sourcePort = UInt16(truncatingIfNeeded: mixed >> 8)
        r.destinationPort = UInt16(truncatingIfNeeded: mixed >> 24)
        r.length = UInt32(truncatingIfNeeded: mixed >> 40) & 0xFFFF
        r.tcpFlags = UInt8(truncatingIfNeeded: mixed >> 3)
        r.verdict = LiveVerdict(rawValue: UInt8(truncatingIfNeeded: sequence % 3))
        r.ruleIndex = UInt32(truncatingIfNeeded: mixed >> 13)
        r.peerIndex = UInt32(truncatingIfNeeded: sequence >> 2)
        r.peerName = LivePeerName(first: mixed, second: ~sequence)
        r.captureFileSequence = UInt32(truncatingIfNeeded: sequence >> 10)
        r.captureOffset = sequence &* 77
        r.detail = mixed ^ 0x5555_5555_5555_5555
        r.detail2 = checksum(r)
        return r
    }

    /// A checksum of every field but `detail2`.
    @inline(__always)
    public static func checksum(_ r: LiveRecord) -> UInt64 {
        var h: UInt64 = 0x243F_6A88_85A3_08D3
        @inline(__always) func add(_ v: UInt64) { h = mix(h ^ v) }
        add(r.timeNanoseconds)
        add(r.flowID)
        add(UInt64(r.kind.rawValue) | UInt64(r.direction.rawValue) << 8 | UInt64(r.ipProtocol) << 16
            | UInt64(r.ipVersion) << 24 | UInt64(r.tcpFlags) << 32 | UInt64(r.verdict.rawValue) << 40)
        add(r.sourceHigh)
        add(r.sourceLow)
        add(r.destinationHigh)
        add(r.destinationLow)
        add(UInt64(r.sourcePort) | UInt64(r.destinationPort) << 16 | UInt64(r.length) << 32)
        add(UInt64(r.ruleIndex) | UInt64(r.peerIndex) << 32)
        add(r.peerName.first)
        add(r.peerName.second)
        add(UInt64(r.captureFileSequence))
        add(r.captureOffset)
        add(r.detail)
        return h
    }

    /// Whether `r` is intact: its checksum matches and it equals the record of its sequence.
    public static func isIntact(_ r: LiveRecord) -> Bool {
        checksum(r) == r.detail2 && r == record(sequence: r.flowID)
    }

    /// SplitMix64 finaliser.
    @inline(__always)
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
