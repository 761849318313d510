// Little-endian field access on byte arrays (handshake messages).
import Core

extension Array where Element == UInt8 {
    /// Reads a little-endian UInt32 at `offset`.
    func le32(_ offset: Int) -> UInt32 {
        UInt32(self[offset]) | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2]) << 16
            | UInt32(self[offset + 3]) << 24
    }

    /// Writes a little-endian UInt32 at `offset`.
    mutating func setLE32(_ offset: Int, _ v: UInt32) {
        for i in 0..<4 { self[offset + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) }
    }
}
