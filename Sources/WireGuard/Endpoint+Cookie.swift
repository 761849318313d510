import Core

extension Endpoint {
    /// The bytes the cookie MAC covers (whitepaper §5.4.7 "source IP address and UDP port"):
    /// 4 or 16 address bytes followed by the port, big-endian, replacing the contents of `out`.
    /// (Only we read these bytes, so the layout need not match other implementations.)
    func writeCookieBytes(into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        if address.isIPv6 {
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: address.high >> (56 - 8 * UInt64(i)))) }
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: address.low >> (56 - 8 * UInt64(i)))) }
        } else {
            let v = address.v4
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32(i)))) }
        }
        out.append(UInt8(port >> 8))
        out.append(UInt8(port & 0xff))
    }
}
