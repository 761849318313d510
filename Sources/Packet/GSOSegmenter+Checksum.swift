// The data-path checksum of GSOSegmenter and TUNCoalescer: RFC 1071 over 8 bytes at a time.
import Core
extension GSOSegmenter {
    /// The 16-bit ones' complement sum (RFC 1071, not complemented, big-endian word order) of
    /// `count` bytes at `source`, copying them to `destination` on the way when one is given.
    ///
    /// Sums native-endian 64-bit words with end-around carry and byte-swaps the fold at the end
    /// (RFC 1071 §2(B): the sum is byte-order independent); an odd final byte is padded with
    /// zero. Like `InternetChecksum.add`, the bytes must start at an even offset of the summed
    /// stream for the result to combine with other pieces.
    @inlinable static func sum(_ source: UnsafeRawPointer, count: Int, copyingTo destination: UnsafeMutableRawPointer? = nil) -> UInt16 {
        var acc: UInt64 = 0
        var i = 0
        @inline(__always) func add(_ w: UInt64) {
            let (s, o) = acc.addingReportingOverflow(w)
            acc = s &+ (o ? 1 : 0)
        }
        if let destination {
            while i &+ 32 <= count {
                let a = source.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let b = source.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self)
                let c = source.loadUnaligned(fromByteOffset: i &+ 16, as: UInt64.self)
                let d = source.loadUnaligned(fromByteOffset: i &+ 24, as: UInt64.self)
                destination.storeBytes(of: a, toByteOffset: i, as: UInt64.self)
                destination.storeBytes(of: b, toByteOffset: i &+ 8, as: UInt64.self)
                destination.storeBytes(of: c, toByteOffset: i &+ 16, as: UInt64.self)
                destination.storeBytes(of: d, toByteOffset: i &+ 24, as: UInt64.self)
                add(a); add(b); add(c); add(d)
                i &+= 32
            }
            while i &+ 8 <= count {
                let a = source.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                destination.storeBytes(of: a, toByteOffset: i, as: UInt64.self)
                add(a)
                i &+= 8
            }
            if i < count { (destination + i).copyMemory(from: source + i, byteCount: count &- i) }
        } else {
            while i &+ 32 <= count {
                add(source.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                add(source.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self))
                add(source.loadUnaligned(fromByteOffset: i &+ 16, as: UInt64.self))
                add(source.loadUnaligned(fromByteOffset: i &+ 24, as: UInt64.self))
                i &+= 32
            }
            while i &+ 8 <= count {
                add(source.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                i &+= 8
            }
        }
        if i < count {
            // The tail, placed in a zeroed word at the same positions (native order).
            var tail: UInt64 = 0
            withUnsafeMutableBytes(of: &tail) { t in
                t.baseAddress!.copyMemory(from: source + i, byteCount: count &- i)
            }
            add(tail)
        }
        var s = (acc & 0xFFFF_FFFF) &+ (acc >> 32)
        s = (s & 0xFFFF) &+ (s >> 16)
        s = (s & 0xFFFF) &+ (s >> 16)
        s = (s & 0xFFFF) &+ (s >> 16)
        let native = UInt16(truncatingIfNeeded: s)
        return UInt16(bigEndian: native)  // native order -> the big-endian-word sum's value
    }
}
