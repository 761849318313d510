import Core
/// Records for checking a ring end to end (tests and `tunnelbench ring`): every field is derived
/// from a sequence number and `detail2` holds a checksum of all the others, so a reader detects a
/// torn record (fields from two different writes), a reordered one, or a corrupted one.
public enum RingSelfTest {
    // Fields are cheap functions of the sequence so generating and checking cost little next to
    // the ring itself.
    /// The record for sequence number `sequence` (carried in `flowID`).
    @inline(__always)
    public static func record(sequence: UInt64) -> LiveRecord {
        var r = LiveRecord()
        r.flowID = sequence
        r.timeNanoseconds = sequence &* 1_000_003
        r.kind = LiveEventKind(rawValue: UInt8(truncatingIfNeeded: sequence & 3))
        r.direction = Direction(rawValue: UInt8(truncatingIfNeeded: sequence & 1))
        r.ipProtocol = sequence & 2 == 0 ? 6 : 17
        r.ipVersion = sequence & 4 == 0 ? 4 : 6
        let mixed = (sequence &* 0x9E37_79B9_7F4A_7C15) ^ (sequence << 17)
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
        r.verdict = Verdict(rawValue: UInt8(truncatingIfNeeded: (sequence >> 3) & 1))
        r.ruleIndex = UInt32(truncatingIfNeeded: mixed >> 13)
        r.peerIndex = UInt32(truncatingIfNeeded: sequence >> 2)
        r.peerName = LivePeerName(first: mixed, second: ~sequence)
        r.captureFileSequence = UInt32(truncatingIfNeeded: sequence >> 10)
        r.captureOffset = sequence &* 77
        r.detail = mixed ^ 0x5555_5555_5555_5555
        r.detail2 = checksum(r)
        return r
    }

    /// A checksum of every field but `detail2`: each 64-bit word of the record times its own odd
    /// constant, summed. Multiplying by an odd number is a bijection, so changing any one field
    /// always changes the sum; the products are independent, so it costs a few nanoseconds.
    @inline(__always)
    public static func checksum(_ r: LiveRecord) -> UInt64 {
        let small = UInt64(r.kind.rawValue) | UInt64(r.direction?.rawValue ?? 0xFF) << 8 | UInt64(r.ipProtocol) << 16
            | UInt64(r.ipVersion) << 24 | UInt64(r.tcpFlags) << 32 | UInt64(r.verdict?.rawValue ?? 0xFF) << 40
        var h = r.timeNanoseconds &* 0x9E37_79B9_7F4A_7C15
        h &+= r.flowID &* 0xBF58_476D_1CE4_E5B9
        h &+= small &* 0x94D0_49BB_1331_11EB
        h &+= r.sourceHigh &* 0xFF51_AFD7_ED55_8CCD
        h &+= r.sourceLow &* 0xC4CE_B9FE_1A85_EC53
        h &+= r.destinationHigh &* 0x8764_5D3B_0F6B_9C5D
        h &+= r.destinationLow &* 0xD6E8_FEB8_6659_FD93
        h &+= (UInt64(r.sourcePort) | UInt64(r.destinationPort) << 16 | UInt64(r.length) << 32) &* 0xA076_1D64_78BD_642F
        h &+= (UInt64(r.ruleIndex) | UInt64(r.peerIndex) << 32) &* 0xE703_7ED1_A0B4_28DB
        h &+= r.peerName.first &* 0x8EBC_6AF0_9C88_C6E3
        h &+= r.peerName.second &* 0x5899_65CC_7537_4CC3
        h &+= UInt64(r.captureFileSequence) &* 0x1D8E_4E27_C47D_124F
        h &+= r.captureOffset &* 0x2545_F491_4F6C_DD1D
        h &+= r.detail &* 0x9FB2_1C65_1E98_DF25
        return h
    }

    /// Whether `r` is intact: its checksum matches (cheap; what the stress loops check).
    @inline(__always)
    public static func isIntact(_ r: LiveRecord) -> Bool {
        checksum(r) == r.detail2
    }

    /// Whether `r` is exactly the record of its sequence (slower; tests).
    public static func isExact(_ r: LiveRecord) -> Bool {
        isIntact(r) && r == record(sequence: r.flowID)
    }

}
