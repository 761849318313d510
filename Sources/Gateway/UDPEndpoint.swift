import Packet

/// A UDP peer address: an IPv4 or IPv6 address and a port. A plain value (24 bytes, no
/// references), cheap to copy and hash; the data path stores one per packet slot.
///
/// IPv6 flow labels and scope ids are not kept (WireGuard endpoints on a router are global or
/// ULA addresses).
public struct UDPEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The address; its family decides which socket carries the datagram.
    public var address: IPAddress
    /// The port, host byte order.
    public var port: UInt16

    /// An endpoint from an address and a port.
    @inlinable public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Parses `1.2.3.4:51820` or `[fd99::1]:51820` (the WireGuard `Endpoint =` form).
    public init?(_ text: some StringProtocol) {
        let s = Substring(text)
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]"), s[s.index(after: close)...].hasPrefix(":"),
                let a = IPAddress(s[s.index(after: s.startIndex)..<close]), a.isIPv6,
                let p = UInt16(s[s.index(close, offsetBy: 2)...])
            else { return nil }
            self.init(address: a, port: p)
        } else {
            guard let colon = s.lastIndex(of: ":"), let a = IPAddress(s[..<colon]), !a.isIPv6,
                let p = UInt16(s[s.index(after: colon)...])
            else { return nil }
            self.init(address: a, port: p)
        }
    }

    /// `1.2.3.4:51820` or `[fd99::1]:51820`.
    public var description: String {
        address.isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}
