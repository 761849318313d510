import Core
/// The Internet checksum (RFC 1071): the ones' complement of the ones' complement sum of 16-bit
/// big-endian words, plus the TCP/UDP/ICMPv6 pseudo-headers (RFC 9293 §3.1, RFC 768,
/// RFC 8200 §8.1) and the incremental update of RFC 1624.
///
/// Accumulate with `add`, read `finalized` for the value to store in a header. Data added in
/// several pieces must start each piece at an even offset of the summed stream (as headers do).
public struct InternetChecksum: Sendable {
    /// The running sum, folded lazily (a 64-bit accumulator cannot overflow for any IP packet).
    public var sum: UInt64 = 0

    @inlinable public init() {}

    /// Adds bytes; an odd final byte is padded with a zero byte (RFC 1071 §4.1).
    @inlinable public mutating func add(_ bytes: UnsafeRawBufferPointer) {
        var i = 0
        let n = bytes.count
        while i &+ 4 <= n {
            sum &+= UInt64(bytes.be32(i))
            i &+= 4
        }
        if i &+ 2 <= n {
            sum &+= UInt64(bytes.be16(i))
            i &+= 2
        }
        if i < n { sum &+= UInt64(bytes[i]) << 8 }
    }

    /// Adds one 16-bit word.
    @inlinable public mutating func add(_ word: UInt16) { sum &+= UInt64(word) }

    /// Adds one 32-bit value as two words.
    @inlinable public mutating func add(_ word: UInt32) { sum &+= UInt64(word) }

    /// Adds an address (4 or 16 bytes, as it appears in a header).
    @inlinable public mutating func add(_ address: IPAddress) {
        if address.isIPv6 {
            sum &+= address.high >> 32
            sum &+= address.high & 0xFFFF_FFFF
            sum &+= address.low >> 32
            sum &+= address.low & 0xFFFF_FFFF
        } else {
            sum &+= UInt64(address.v4)
        }
    }

    /// Adds the TCP/UDP/ICMPv6 pseudo-header: addresses, protocol and upper-layer length
    /// (RFC 9293 §3.1 for IPv4; RFC 8200 §8.1 for IPv6 — the same words in the sum).
    @inlinable public mutating func addPseudoHeader(
        source: IPAddress, destination: IPAddress, proto: IPProtocol, length: Int
    ) {
        add(source)
        add(destination)
        sum &+= UInt64(proto.rawValue)
        sum &+= UInt64(UInt32(truncatingIfNeeded: length))
    }

    /// The 16-bit ones' complement sum (not complemented).
    @inlinable public var folded: UInt16 {
        var s = sum
        while s >> 16 != 0 { s = (s & 0xFFFF) &+ (s >> 16) }
        return UInt16(s)
    }

    /// The checksum to store: `~folded`. Verifying a packet whose checksum field is included
    /// gives 0 here.
    @inlinable public var finalized: UInt16 { ~folded }

    /// The checksum of `bytes` alone.
    @inlinable public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var c = InternetChecksum()
        c.add(bytes)
        return c.finalized
    }

    /// RFC 1624 eqn. 3: the new checksum after one 16-bit word of the covered data changed from
    /// `old` to `new`: HC' = ~(~HC + ~m + m').
    @inlinable public static func updated(_ checksum: UInt16, replacing old: UInt16, with new: UInt16) -> UInt16 {
        var s = UInt32(~checksum) &+ UInt32(~old) &+ UInt32(new)
        s = (s & 0xFFFF) &+ (s >> 16)
        s = (s & 0xFFFF) &+ (s >> 16)
        return ~UInt16(s)
    }
}
