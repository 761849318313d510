// TAI64N timestamps for handshake initiations.
import Core

/// A 12-byte TAI64N timestamp (whitepaper §5.4.2): 8 bytes big-endian seconds since 1970 plus
/// 2^62 + 10, then 4 bytes big-endian nanoseconds. Nanoseconds are rounded down to a multiple of
/// 2^24 ns (~16.8 ms), as wireguard-go and the kernel do, so the timestamp does not leak fine timing.
public struct TAI64N: Comparable, Hashable, Sendable {
    /// The 12 encoded bytes.
    public let bytes: [UInt8]

    /// The zero timestamp (older than every real one).
    public static let zero = TAI64N(raw: [UInt8](repeating: 0, count: 12))!

    /// A timestamp from raw encoded bytes (exactly 12).
    public init?(raw: [UInt8]) {
        guard raw.count == 12 else { return nil }
        bytes = raw
    }

    /// The timestamp for wall-clock time `unixNanoseconds` (nanoseconds since 1970-01-01 UTC).
    public init(unixNanoseconds: UInt64) {
        let seconds = unixNanoseconds / 1_000_000_000 + 0x4000_0000_0000_000a
        let nanos = UInt32(unixNanoseconds % 1_000_000_000) & ~UInt32(0xff_ffff)
        var b = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { b[i] = UInt8(truncatingIfNeeded: seconds >> (56 - 8 * UInt64(i))) }
        for i in 0..<4 { b[8 + i] = UInt8(truncatingIfNeeded: nanos >> (24 - 8 * UInt32(i))) }
        bytes = b
    }

    /// Byte order is time order.
    public static func < (a: TAI64N, b: TAI64N) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}
