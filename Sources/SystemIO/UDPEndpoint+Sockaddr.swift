import Core
import Glibc
import Packet

extension Endpoint {
    /// Reads an endpoint from a `sockaddr_in` or `sockaddr_in6` (an IPv4-mapped IPv6 address stays
    /// IPv6). Returns nil for any other family.
    public init?(sockaddr storage: UnsafeRawPointer) {
        let family = storage.loadUnaligned(as: sa_family_t.self)
        switch Int32(family) {
        case AF_INET:
            let sin = storage.loadUnaligned(as: sockaddr_in.self)
            self.init(address: IPAddress(v4: UInt32(bigEndian: sin.sin_addr.s_addr)), port: UInt16(bigEndian: sin.sin_port))
        case AF_INET6:
            let sin6 = storage.loadUnaligned(as: sockaddr_in6.self)
            var a = sin6.sin6_addr
            let (h, l) = withUnsafeBytes(of: &a) { raw in
                (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            self.init(address: IPAddress(v6High: h, low: l), port: UInt16(bigEndian: sin6.sin6_port))
        default:
            return nil
        }
    }

    /// Writes this endpoint as a `sockaddr_in` or `sockaddr_in6` at `storage` (room for a
    /// `sockaddr_storage`) and returns its length.
    @discardableResult
    public func write(sockaddr storage: UnsafeMutableRawPointer) -> socklen_t {
        if address.isIPv6 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { raw in
                raw.storeBytes(of: address.high.bigEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: address.low.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            storage.storeBytes(of: sin6, as: sockaddr_in6.self)
            return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr.s_addr = address.v4.bigEndian
        storage.storeBytes(of: sin, as: sockaddr_in.self)
        return socklen_t(MemoryLayout<sockaddr_in>.size)
    }

    /// This endpoint as a `sockaddr_storage` and its length.
    public var sockaddrStorage: (sockaddr_storage, socklen_t) {
        var s = sockaddr_storage()
        let len = withUnsafeMutableBytes(of: &s) { write(sockaddr: $0.baseAddress!) }
        return (s, len)
    }
}
