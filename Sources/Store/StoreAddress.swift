/// An IPv4 or IPv6 address as the store keeps it: the same 128-bit layout as `Packet.IPAddress`
/// (IPv4 in the low 32 bits of `low`), stored as a 4- or 16-byte big-endian BLOB.
/// Store depends on SQLite only, so the gateway converts with `StoreAddress(high:low:isIPv6:)`.
public struct StoreAddress: Hashable, Sendable, CustomStringConvertible {
    /// The most significant 64 bits (IPv6 only; 0 for IPv4).
    public var high: UInt64
    /// The least significant 64 bits (for IPv4, the address in the low 32 bits).
    public var low: UInt64
    /// True for IPv6.
    public var isIPv6: Bool

    /// An address from its halves (same meaning as `Packet.IPAddress`).
    public init(high: UInt64, low: UInt64, isIPv6: Bool) {
        self.high = high
        self.low = low
        self.isIPv6 = isIPv6
    }

    /// An IPv4 address from its 32-bit big-endian value (`10.0.0.1` is `0x0A00_0001`).
    public init(v4 value: UInt32) { self.init(high: 0, low: UInt64(value), isIPv6: false) }

    /// Decodes the stored BLOB (4 or 16 bytes); nil for any other length.
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

    /// Dotted quad, or RFC 5952 IPv6 text (longest run of zero groups as `::`, lowercase hex).
    public var description: String {
        if !isIPv6 {
            let v = UInt32(truncatingIfNeeded: low)
            return "\(v >> 24).\(v >> 16 & 0xff).\(v >> 8 & 0xff).\(v & 0xff)"
        }
        var groups = [UInt16](repeating: 0, count: 8)
        for i in 0..<4 {
            groups[i] = UInt16(truncatingIfNeeded: high >> UInt64(48 - 16 * i))
            groups[i + 4] = UInt16(truncatingIfNeeded: low >> UInt64(48 - 16 * i))
        }
        var bestStart = -1, bestLen = 0, i = 0
        while i < 8 {
            if groups[i] == 0 {
                var j = i
                while j < 8 && groups[j] == 0 { j += 1 }
                if j - i > bestLen && j - i >= 2 { bestStart = i; bestLen = j - i }
                i = j
            } else { i += 1 }
        }
        var out = ""
        i = 0
        while i < 8 {
            if i == bestStart {
                out += "::"
                i += bestLen
                continue
            }
            if !out.isEmpty && !out.hasSuffix(":") { out += ":" }
            out += String(groups[i], radix: 16)
            i += 1
        }
        return out
    }
}
