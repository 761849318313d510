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
