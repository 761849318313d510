import Core

/// What `tunnelctl init` learns about the router's own networking, from the kernel's text tables
/// (`/proc/net/route`, `/proc/net/ipv6_route`, `/proc/net/{udp,udp6,tcp,tcp6}`) and the
/// interfaces' addresses (`getifaddrs(3)`; the caller gathers them, so this stays pure): the
/// prefixes already in use (a tunnel subnet must not overlap them), the WAN interface (the one
/// the default route leaves by) and its address, and whether a resolver listens on port 53 on
/// every address (then it answers on the tunnel address too, once the interface is up).
public struct HostNetwork: Sendable, Hashable {
    /// One route: the interface it leaves by and its destination (`0.0.0.0/0`, `::/0` = default).
    public struct Route: Sendable, Hashable {
        public var interface: String
        public var destination: IPPrefix
        public init(interface: String, destination: IPPrefix) {
            self.interface = interface
            self.destination = destination
        }
    }

    /// One address of an interface, with the prefix length of its subnet.
    public struct Address: Sendable, Hashable {
        public var interface: String
        public var address: InterfaceAddress
        public init(interface: String, address: InterfaceAddress) {
            self.interface = interface
            self.address = address
        }
    }

    public var routes: [Route]
    public var addresses: [Address]
    /// Local addresses with a socket bound to port 53 (UDP, or TCP listening).
    public var dnsListeners: [IPAddress]

    public init(routes: [Route] = [], addresses: [Address] = [], dnsListeners: [IPAddress] = []) {
        self.routes = routes
        self.addresses = addresses
        self.dnsListeners = dnsListeners
    }

    /// Every prefix a route or an address's subnet covers, except the default routes: a tunnel
    /// subnet overlapping one of them would shadow (or be shadowed by) a network the host uses.
    public var prefixesInUse: [IPPrefix] {
        routes.map(\.destination).filter { $0.length > 0 } + addresses.map(\.address.subnet)
    }

    /// The interface of the IPv4 default route (else the IPv6 one); nil without a default route.
    public var wanInterface: String? {
        routes.first { $0.destination.length == 0 && !$0.destination.address.isIPv6 }?.interface
            ?? routes.first { $0.destination.length == 0 && $0.destination.address.isIPv6 }?.interface
    }

    /// The first global address of `interface` (IPv4 first; no loopback, link-local or ULA).
    public func publicAddress(of interface: String) -> IPAddress? {
        let mine = addresses.filter { $0.interface == interface }.map(\.address.address)
        func global(_ a: IPAddress) -> Bool {
            if a.isIPv6 { return a.high >> 54 != 0x3FA && a.high >> 57 != 0x7E && !(a.high == 0 && a.low <= 1) }
            return a.v4 >> 24 != 127 && a.v4 >> 16 != 0xA9FE
        }
        return mine.first { !$0.isIPv6 && global($0) } ?? mine.first { $0.isIPv6 && global($0) }
    }

    /// True when something listens on port 53 of every IPv4 address (`0.0.0.0`, or `::` without
    /// IPV6_V6ONLY, which the tables cannot tell apart: `::` counts) — dnsmasq's and unbound's
    /// `0.0.0.0` setups —, so a resolver will answer on the tunnel address as well.
    public var resolverOnEveryAddress: Bool {
        dnsListeners.contains { $0 == IPAddress(v4: 0) || $0 == IPAddress(v6High: 0, low: 0) }
    }

    // MARK: The kernel's tables

    /// `/proc/net/route`: `Iface Destination Gateway Flags RefCnt Use Metric Mask …`, addresses
    /// as 8 hex digits of the host-order word holding the network-order bytes. Lines that do not
    /// read as a route (the header included) are skipped.
    public static func ipv4Routes(_ text: String) -> [Route] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, let dst = word(f[1]), let mask = word(f[7]) else { return nil }
            let length = mask.nonzeroBitCount
            guard mask == (length == 0 ? 0 : ~UInt32(0) << (32 - length)),
                let p = IPPrefix(IPAddress(v4: dst), length: length) else { return nil }
            return Route(interface: String(f[0]), destination: p)
        }
    }

    /// `/proc/net/ipv6_route`: `dest destlen src srclen nexthop metric refcnt use flags iface`,
    /// addresses as 32 hex digits in network order, lengths as 2 hex digits.
    public static func ipv6Routes(_ text: String) -> [Route] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 10, let dst = ipv6(f[0]), let length = Int(f[1], radix: 16), length <= 128,
                let p = IPPrefix(dst, length: length) else { return nil }
            return Route(interface: String(f[9]), destination: p)
        }
    }

    /// The local addresses of `/proc/net/udp|udp6|tcp|tcp6` sockets bound to `port`: UDP sockets
    /// (any state) and TCP sockets in LISTEN (`0A`). `sl local_address rem_address st …`, the
    /// address as the kernel's words in host order (8 or 32 hex digits), the port in hex.
    public static func listeners(_ text: String, tcp: Bool, port: UInt16) -> [IPAddress] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 4, let colon = f[1].lastIndex(of: ":"), UInt16(f[1][f[1].index(after: colon)...], radix: 16) == port
            else { return nil }
            if tcp && f[3] != "0A" { return nil }
            let hex = f[1][..<colon]
            if hex.count == 8 { return word(hex).map { IPAddress(v4: $0) } }
            guard hex.count == 32 else { return nil }
            // Four host-order words, each holding four network-order bytes.
            var words: [UInt32] = []
            var i = hex.startIndex
            for _ in 0..<4 {
                let j = hex.index(i, offsetBy: 8)
                guard let w = word(hex[i..<j]) else { return nil }
                words.append(w)
                i = j
            }
            return IPAddress(v6High: UInt64(words[0]) << 32 | UInt64(words[1]), low: UInt64(words[2]) << 32 | UInt64(words[3]))
        }
    }

    /// 8 hex digits of a host-order word whose memory holds network-order bytes, as the address
    /// value (`0101A8C0` → 192.168.1.1 on a little-endian host).
    static func word(_ hex: Substring) -> UInt32? {
        guard hex.count == 8, let v = UInt32(hex, radix: 16) else { return nil }
        return UInt32(bigEndian: v)
    }

    /// 32 hex digits in network order.
    static func ipv6(_ hex: Substring) -> IPAddress? {
        guard hex.count == 32, let hi = UInt64(hex.prefix(16), radix: 16), let lo = UInt64(hex.suffix(16), radix: 16) else { return nil }
        return IPAddress(v6High: hi, low: lo)
    }
}
