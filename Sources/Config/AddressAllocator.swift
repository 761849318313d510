import Core

/// The next free peer address in the interface subnets (`tunnelctl peer add --ip auto`).
/// Pure. For the first IPv4 and the first IPv6 interface address, the lowest host address of its
/// subnet that is not the network address (nor, in IPv4, the broadcast address), not one of the
/// gateway's own addresses and not inside any configured peer's AllowedIPs. A peer's prefix wider
/// than the subnet itself (a route through that peer, `0.0.0.0/0`) does not take addresses: a
/// host route to the new peer is more specific.
public enum AddressAllocator {
    /// One free host prefix (`/32`, `/128`) per address family the interface has, v4 first.
    /// - Throws: `ValueError` naming the subnet when one has no free address left.
    public static func next(interface addresses: [InterfaceAddress], taken: [IPPrefix]) throws(ValueError) -> [IPPrefix] {
        var out: [IPPrefix] = []
        for v6 in [false, true] {
            guard let a = addresses.first(where: { $0.address.isIPv6 == v6 }) else { continue }
            guard let free = nextFree(in: a.subnet, own: addresses.map(\.address), taken: taken) else {
                throw ValueError("no free address left in \(a.subnet) (the gateway's own and every peer's AllowedIPs take them)",
                                 hint: "give one with --ip ADDR, or use a wider Address in [Interface]")
            }
            out.append(IPPrefix(free, length: v6 ? 128 : 32)!)
        }
        return out
    }

    /// The lowest free host address of `subnet`, nil when there is none.
    static func nextFree(in subnet: IPPrefix, own: [IPAddress], taken: [IPPrefix]) -> IPAddress? {
        let v6 = subnet.address.isIPv6
        let width = v6 ? 128 : 32
        let first = Wide(subnet.address)
        let last = first.or(Wide.hostMask(width: width, prefix: subnet.length))
        let blocking = taken.filter { $0.address.isIPv6 == v6 && $0.length >= subnet.length }
        guard subnet.length < width else { return nil }
        // Hosts: network + 1 ... last (IPv4 also excludes the broadcast address, except in a /31).
        let lastHost = !v6 && subnet.length < 31 ? last.minusOne : last
        var c = subnet.length == 31 && !v6 ? first : first.plusOne
        // Taken ranges (the gateway's own addresses and the peers' prefixes) in address order;
        // the lowest free host is below the first range that starts above the candidate.
        var ranges: [(start: Wide, end: Wide)] = own.filter { $0.isIPv6 == v6 }.map { (Wide($0), Wide($0)) }
        ranges += blocking.map { (Wide($0.address), Wide($0.address).or(Wide.hostMask(width: width, prefix: $0.length))) }
        ranges.sort { $0.start < $1.start }
        for t in ranges {
            if c < t.start { break }
            if t.end >= c {
                if t.end >= lastHost { return nil }
                c = t.end.plusOne
            }
        }
        return c <= lastHost ? c.address(v6: v6) : nil
    }

    /// A 128-bit unsigned number (an IPv4 address in the low 32 bits).
    struct Wide: Comparable {
        var high: UInt64
        var low: UInt64

        init(high: UInt64, low: UInt64) { self.high = high; self.low = low }
        init(_ a: IPAddress) { self.init(high: a.isIPv6 ? a.high : 0, low: a.isIPv6 ? a.low : UInt64(a.v4)) }

        func address(v6: Bool) -> IPAddress {
            v6 ? IPAddress(v6High: high, low: low) : IPAddress(v4: UInt32(truncatingIfNeeded: low))
        }

        static func hostMask(width: Int, prefix: Int) -> Wide {
            let bits = width - prefix
            if bits >= 128 { return Wide(high: .max, low: .max) }
            if bits >= 64 { return Wide(high: bits == 64 ? 0 : (1 << UInt64(bits - 64)) - 1, low: .max) }
            return Wide(high: 0, low: bits == 0 ? 0 : (1 << UInt64(bits)) - 1)
        }

        func or(_ o: Wide) -> Wide { Wide(high: high | o.high, low: low | o.low) }
        var plusOne: Wide { low == .max ? Wide(high: high &+ 1, low: 0) : Wide(high: high, low: low + 1) }
        var minusOne: Wide { low == 0 ? Wide(high: high &- 1, low: .max) : Wide(high: high, low: low - 1) }
        static func < (a: Wide, b: Wide) -> Bool { a.high != b.high ? a.high < b.high : a.low < b.low }
    }
}
