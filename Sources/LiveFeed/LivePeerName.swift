import Core
/// A peer's name as carried in a ring slot: at most 16 UTF-8 bytes, NUL-padded, stored inline so
/// building a record allocates nothing. The daemon makes one per peer when it loads its config.
public struct LivePeerName: Hashable, Sendable, CustomStringConvertible {
    /// Bytes 0–7 of the name (first byte in the least significant bits).
    public var first: UInt64
    /// Bytes 8–15 of the name.
    public var second: UInt64

    /// The empty name (no peer).
    public static let none = LivePeerName(first: 0, second: 0)

    /// Raw initializer over the two little-endian words of the slot.
    public init(first: UInt64, second: UInt64) {
        self.first = first
        self.second = second
    }

    /// `name` truncated to 16 UTF-8 bytes, never in the middle of a character.
    public init(_ name: String) {
        var bytes = (UInt64(0), UInt64(0))
        var count = 0
        for scalar in name.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            if count + encoded.count > 16 { break }
            withUnsafeMutableBytes(of: &bytes) { raw in
                for byte in encoded {
                    raw[count] = byte
                    count += 1
                }
            }
        }
        first = UInt64(littleEndian: bytes.0)
        second = UInt64(littleEndian: bytes.1)
    }

    /// The name as a string (bytes up to the first NUL; invalid UTF-8 repaired).
    public var description: String {
        var words = (first.littleEndian, second.littleEndian)
        return withUnsafeBytes(of: &words) { raw in
            let length = raw.firstIndex(of: 0) ?? 16
            return String(decoding: raw[..<length], as: UTF8.self)
        }
    }
}
