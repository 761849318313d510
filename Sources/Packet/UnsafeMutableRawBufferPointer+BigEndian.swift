// Big-endian field writes for the reply builders. Callers check bounds first; these do not.
import Core
extension UnsafeMutableRawBufferPointer {
    @inlinable @inline(__always) func setBE16(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }
    @inlinable @inline(__always) func setBE32(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }
    @inlinable @inline(__always) func setBE64(_ value: UInt64, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
    }
}
