// Big-endian field reads for the parser. Callers check bounds first; these do not.
import Core
extension UnsafeRawBufferPointer {
    @inlinable @inline(__always) func be16(_ offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
    @inlinable @inline(__always) func be32(_ offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    @inlinable @inline(__always) func be64(_ offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}
