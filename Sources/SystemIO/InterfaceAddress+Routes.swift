import Core
import Packet

extension InterfaceAddress {
    /// The prefixes among `routes` that still need a route on an interface with `addresses`: those
    /// not already inside one of the addresses' subnets (the kernel adds those routes itself, and
    /// adding them again fails with EEXIST). Duplicates are removed; order is kept.
    public static func routesOutsideSubnets(_ routes: [IPPrefix], of addresses: [InterfaceAddress]) -> [IPPrefix] {
        var seen = Set<IPPrefix>()
        return routes.filter { r in
            let covered = addresses.contains { a in
                let s = a.subnet
                return s.length <= r.length && s.contains(r.address)
            }
            return !covered && seen.insert(r).inserted
        }
    }
}

extension InterfaceAddress {
    /// An interface address, or nil when the prefix length does not fit the address family.
    public init?(_ address: IPAddress, prefixLength: Int) {
        guard prefixLength >= 0 && prefixLength <= address.bitWidth else { return nil }
        self.init(address: address, prefixLength: prefixLength)
    }
}
