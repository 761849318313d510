/// A UDP endpoint as text names it: a host (an IP address or, in config files only, a DNS name)
/// and a port. Text forms are `host:port`, `1.2.3.4:51820` and `[fd00::1]:51820` (brackets for
/// IPv6, as wg-quick and the UAPI write them). The one endpoint parser; `Endpoint` builds on it.
public struct HostPort: Hashable, Sendable, Codable, CustomStringConvertible {
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
        guard let port = HostPort.parsePort(portText), port != 0 else { return nil }
        self.host = String(host)
        self.port = port
    }

    /// `host:port`, with brackets around an IPv6 host.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Decimal digits only, 0...65535.
    public static func parsePort(_ text: some StringProtocol) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt16(text)
    }
}

/// Where a datagram came from or should go: an IP address and a UDP port (a resolved endpoint;
/// the WireGuard core, the UDP socket, the UAPI and the control replies use this one type).
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// The IPv4 or IPv6 address.
    public var address: IPAddress
    /// The UDP port.
    public var port: UInt16

    /// An endpoint from an address and a UDP port.
    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Parses `1.2.3.4:51820` or `[fd00::1]:51820` (an address literal, no DNS names).
    public init?(_ text: some StringProtocol) {
        guard let hp = HostPort(text), let a = hp.address else { return nil }
        self.init(address: a, port: hp.port)
    }

    /// `192.0.2.1:51820` or `[2001:db8::1]:51820`.
    public var description: String {
        address.isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}
