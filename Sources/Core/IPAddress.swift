/// An IPv4 or IPv6 address as a 128-bit value plus its family.
///
/// IPv4 addresses keep their 32 bits in the low bits of `low` (network order read as a big-endian
/// integer, so `10.0.0.1` is `0x0A00_0001`) with `high == 0`. Two addresses of different families
/// are never equal, even when an IPv6 address is the IPv4-mapped form of an IPv4 one.
public struct IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The most significant 64 bits (IPv6 only; 0 for IPv4).
    public var high: UInt64
    /// The least significant 64 bits (for IPv4, the address in the low 32 bits).
    public var low: UInt64
    /// True for IPv6.
    public var isIPv6: Bool

    /// An IPv4 address from its 32-bit big-endian value.
    @inlinable public init(v4 value: UInt32) {
        high = 0
        low = UInt64(value)
        isIPv6 = false
    }

    /// An IPv6 address from its two 64-bit big-endian halves.
    @inlinable public init(v6High high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
        isIPv6 = true
    }

    /// The IPv4 value (meaningful only when `!isIPv6`).
    @inlinable public var v4: UInt32 { UInt32(truncatingIfNeeded: low) }

    /// 32 for IPv4, 128 for IPv6.
    @inlinable public var bitWidth: Int { isIPv6 ? 128 : 32 }

    /// The address bits left-aligned in 128 bits (IPv4 occupies the top 32 bits), which makes
    /// prefix arithmetic the same for both families.
    @inlinable public var leftAligned: (UInt64, UInt64) {
        isIPv6 ? (high, low) : (low << 32, 0)
    }

    /// Bit `index` counted from the most significant bit (0 ..< bitWidth).
    @inlinable public func bit(_ index: Int) -> Bool {
        let (h, l) = leftAligned
        return index < 64 ? (h >> UInt64(63 - index)) & 1 == 1 : (l >> UInt64(127 - index)) & 1 == 1
    }

    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        if a.isIPv6 != b.isIPv6 { return !a.isIPv6 }
        return (a.high, a.low) < (b.high, b.low)
    }

    /// Parses dotted-quad IPv4 (`10.0.0.1`) or RFC 4291 / RFC 5952 IPv6 text (`fd99::1`,
    /// `::ffff:192.0.2.1`). Brackets and zone indices are not accepted here. Returns nil when the
    /// text is not an address.
    public init?<S: StringProtocol>(_ text: S) {
        let utf8 = Array(text.utf8)
        if utf8.contains(UInt8(ascii: ":")) {
            guard let (h, l) = IPAddress.parseV6(utf8[...]) else { return nil }
            self.init(v6High: h, low: l)
        } else {
            guard let v = IPAddress.parseV4(utf8[...]) else { return nil }
            self.init(v4: v)
        }
    }

    static func parseV4(_ s: ArraySlice<UInt8>) -> UInt32? {
        var value: UInt32 = 0
        var octets = 0
        var current: UInt32 = 0
        var digits = 0
        for c in s {
            if c == UInt8(ascii: ".") {
                guard digits > 0, octets < 3 else { return nil }
                value = value << 8 | current
                octets += 1
                current = 0
                digits = 0
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                // Leading zeros are refused: "010" is octal in some tools and ambiguous here.
                if digits == 1 && current == 0 { return nil }
                current = current * 10 + UInt32(c - UInt8(ascii: "0"))
                digits += 1
                guard current <= 255 else { return nil }
            } else {
                return nil
            }
        }
        guard digits > 0, octets == 3 else { return nil }
        return value << 8 | current
    }

    static func parseV6(_ s: ArraySlice<UInt8>) -> (UInt64, UInt64)? {
        var groups: [UInt16] = []
        var gapIndex: Int? = nil
        var i = s.startIndex
        let end = s.endIndex
        if s.starts(with: [UInt8(ascii: ":"), UInt8(ascii: ":")]) {
            gapIndex = 0
            i += 2
            if i == end { return (0, 0) }
        } else if s.first == UInt8(ascii: ":") {
            return nil
        }
        while i < end {
            // One group: up to 4 hex digits, or a trailing dotted IPv4.
            var j = i
            while j < end && s[j] != UInt8(ascii: ":") { j += 1 }
            let field = s[i..<j]
            if field.contains(UInt8(ascii: ".")) {
                guard j == end, groups.count <= 6, let v4 = parseV4(field) else { return nil }
                groups.append(UInt16(v4 >> 16))
                groups.append(UInt16(v4 & 0xFFFF))
                i = j
                break
            }
            guard (1...4).contains(field.count) else { return nil }
            var g: UInt16 = 0
            for c in field {
                guard let d = hexValue(c) else { return nil }
                g = g << 4 | UInt16(d)
            }
            groups.append(g)
            if j == end { i = j; break }
            // j points at ':'
            if j + 1 < end && s[j + 1] == UInt8(ascii: ":") {
                guard gapIndex == nil else { return nil }
                gapIndex = groups.count
                i = j + 2
            } else {
                i = j + 1
                guard i < end else { return nil }  // trailing single ':'
            }
        }
        if let gap = gapIndex {
            guard groups.count <= 7 else { return nil }
            groups.insert(contentsOf: repeatElement(0, count: 8 - groups.count), at: gap)
        }
        guard groups.count == 8 else { return nil }
        var h: UInt64 = 0
        var l: UInt64 = 0
        for k in 0..<4 { h = h << 16 | UInt64(groups[k]) }
        for k in 4..<8 { l = l << 16 | UInt64(groups[k]) }
        return (h, l)
    }

    /// The value of one hex digit (either case), or nil.
    public static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Dotted quad for IPv4; RFC 5952 canonical text for IPv6 (lower case, longest zero run as `::`,
    /// IPv4-mapped addresses as `::ffff:192.0.2.1` per §5, as `inet_ntop` writes them).
    public var description: String {
        if !isIPv6 {
            let v = v4
            return "\(v >> 24).\(v >> 16 & 0xFF).\(v >> 8 & 0xFF).\(v & 0xFF)"
        }
        if high == 0, low >> 32 == 0xFFFF {
            return "::ffff:" + IPAddress(v4: UInt32(truncatingIfNeeded: low)).description
        }
        var groups = [UInt16](repeating: 0, count: 8)
        for k in 0..<4 {
            groups[k] = UInt16(truncatingIfNeeded: high >> UInt64(48 - 16 * k))
            groups[k + 4] = UInt16(truncatingIfNeeded: low >> UInt64(48 - 16 * k))
        }
        // Longest run of two or more zero groups (first one wins ties).
        var bestStart = -1, bestLen = 0, k = 0
        while k < 8 {
            if groups[k] == 0 {
                var e = k
                while e < 8 && groups[e] == 0 { e += 1 }
                if e - k > bestLen && e - k >= 2 { bestStart = k; bestLen = e - k }
                k = e
            } else {
                k += 1
            }
        }
        func hex(_ g: UInt16) -> String { String(g, radix: 16) }
        if bestStart < 0 { return groups.map(hex).joined(separator: ":") }
        let head = groups[..<bestStart].map(hex).joined(separator: ":")
        let tail = groups[(bestStart + bestLen)...].map(hex).joined(separator: ":")
        return head + "::" + tail
    }
}

/// An address prefix (CIDR block) such as `10.0.0.0/8` or `fd99::/64`. The stored address has the
/// host bits cleared.
public struct IPPrefix: Hashable, Sendable, CustomStringConvertible {
    /// The network address, host bits zero.
    public let address: IPAddress
    /// Prefix length in bits (0...32 for IPv4, 0...128 for IPv6).
    public let length: Int

    /// A prefix from an address and a length; host bits of `address` are cleared. Returns nil when
    /// the length does not fit the family.
    public init?(_ address: IPAddress, length: Int) {
        guard length >= 0 && length <= address.bitWidth else { return nil }
        self.address = IPPrefix.masked(address, length)
        self.length = length
    }

    /// Parses `ADDR/LEN` or a bare address (a host prefix: /32 or /128).
    public init?<S: StringProtocol>(_ text: S) {
        if let slash = text.firstIndex(of: "/") {
            guard let a = IPAddress(text[..<slash]) else { return nil }
            let lenText = text[text.index(after: slash)...]
            guard !lenText.isEmpty, lenText.count <= 3, lenText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let len = Int(lenText)
            else { return nil }
            self.init(a, length: len)
        } else {
            guard let a = IPAddress(text) else { return nil }
            self.init(a, length: a.bitWidth)
        }
    }

    /// True when `candidate` is of the same family and inside this prefix.
    @inlinable public func contains(_ candidate: IPAddress) -> Bool {
        guard candidate.isIPv6 == address.isIPv6 else { return false }
        return IPPrefix.masked(candidate, length) == address
    }

    @inlinable static func masked(_ a: IPAddress, _ length: Int) -> IPAddress {
        if !a.isIPv6 {
            let mask: UInt32 = length == 0 ? 0 : ~UInt32(0) << UInt32(32 - length)
            return IPAddress(v4: a.v4 & mask)
        }
        let hMask: UInt64 = length >= 64 ? ~0 : (length == 0 ? 0 : ~UInt64(0) << UInt64(64 - length))
        let lMask: UInt64 = length <= 64 ? 0 : (length == 128 ? ~0 : ~UInt64(0) << UInt64(128 - length))
        return IPAddress(v6High: a.high & hMask, low: a.low & lMask)
    }

    public var description: String { "\(address)/\(length)" }
}

