import Packet
import WireGuard

/// A UDP peer address: an IPv4 or IPv6 address and a port. A plain value (24 bytes, no
/// references), cheap to copy and hash; the data path stores one per packet slot.
///
/// IPv6 flow labels and scope ids are not kept (WireGuard endpoints on a router are global or
/// ULA addresses).
public typealias UDPEndpoint = WireGuard.Endpoint

extension UDPEndpoint {
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
}
