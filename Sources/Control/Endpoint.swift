import Packet

/// A peer's UDP endpoint: a host (an IP address or, in config files only, a DNS name) and a port.
/// Text forms are `host:port`, `1.2.3.4:51820` and `[fd00::1]:51820` (brackets for IPv6, as
/// wg-quick and the UAPI write them).
public struct Endpoint: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The host: an address literal or a DNS name (resolved by the daemon at start).
    public var host: String
    /// The UDP port (1...65535).
    public var port: UInt16

    /// An endpoint from its parts.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// The address when `host` is an IP literal, else nil.
    public var address: IPAddress? { IPAddress(host) }

    /// Parses `host:port` or `[v6]:port`. Returns nil when the port is missing, not a number in
    /// 1...65535, the host is empty, or an IPv6 address is not bracketed.
    public init?(_ text: some StringProtocol) {
        let s = String(text)
        let host: Substring
        let portText: Substring
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { return nil }
            host = s[s.index(after: s.startIndex)..<close]
            let rest = s[s.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard IPAddress(host)?.isIPv6 == true else { return nil }
        } else {
            guard let colon = s.lastIndex(of: ":") else { return nil }
            host = s[..<colon]
            portText = s[s.index(after: colon)...]
            guard !host.contains(":") else { return nil }  // unbracketed IPv6
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else { return nil }
        guard let port = Endpoint.parsePort(portText), port != 0 else { return nil }
        self.host = String(host)
        self.port = port
    }

    /// `host:port`, with brackets around an IPv6 host.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Decimal digits only, 0...65535.
    static func parsePort(_ text: some StringProtocol) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt16(text)
    }
}
