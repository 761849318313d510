import Core

/// An address as the store keeps it: the 128-bit layout of `IPAddress` (IPv4 in the low 32
/// bits of `low`) as a 4- or 16-byte big-endian BLOB.

extension IPAddress {
    /// An address from its fields (IPv4 in the low 32 bits of `low`).
    public init(high: UInt64, low: UInt64, isIPv6: Bool) {
        if isIPv6 { self.init(v6High: high, low: low) } else { self.init(v4: UInt32(truncatingIfNeeded: low)) }
    }

    /// An address from its 4- or 16-byte BLOB; nil for any other length.
    public init?(blob: [UInt8]) {
        func be(_ s: ArraySlice<UInt8>) -> UInt64 { s.reduce(0) { $0 << 8 | UInt64($1) } }
        switch blob.count {
        case 4: self.init(high: 0, low: be(blob[0..<4]), isIPv6: false)
        case 16: self.init(high: be(blob[0..<8]), low: be(blob[8..<16]), isIPv6: true)
        default: return nil
        }
    }

    /// Calls `body` with the stored BLOB bytes, without allocating.
    func withBlob<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        var bytes = (high.bigEndian, low.bigEndian)
        return withUnsafeBytes(of: &bytes) { raw in
            isIPv6 ? body(raw) : body(UnsafeRawBufferPointer(rebasing: raw[12..<16]))
        }
    }
}
