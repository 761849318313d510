import Core
import Glibc
import Packet
import Runtime

/// Brings a TUN interface into service over rtnetlink (no `ip` commands) and takes it out again,
/// undoing exactly what it did.
///
/// ``bringUp(name:mtu:addresses:routes:)`` runs, in order: look up the interface, set the MTU, add
/// every address, set the link up, add every route (main table, `proto static`, `dev NAME`). Each
/// completed step is journaled; if a step fails, the steps already done are undone and the error
/// thrown, e.g. `netlink: add address fd99::1/64 on tv0: File exists (EEXIST)`.
/// ``tearDown()`` undoes the journal: routes deleted, addresses deleted (before the link goes down,
/// which would drop IPv6 addresses by itself), link set down (only if it was down before), MTU
/// restored. A route or address the kernel already removed (ESRCH, EADDRNOTAVAIL) counts as undone.
///
/// Needs CAP_NET_ADMIN. One configurator per interface; not thread-safe.
public final class NetlinkInterfaceConfigurator {
    /// One completed change, with what is needed to undo it.
    public enum Step: Sendable, Equatable, CustomStringConvertible {
        /// MTU changed from `old` to `new`.
        case mtu(old: UInt32, new: UInt32)
        /// An address added.
        case address(InterfaceAddress)
        /// Link set up (it was down).
        case up
        /// A route added.
        case route(IPPrefix)

        public var description: String {
            switch self {
            case .mtu(let old, let new): return "mtu \(old) -> \(new)"
            case .address(let a): return "address \(a)"
            case .up: return "link up"
            case .route(let p): return "route \(p)"
            }
        }
    }

    private let netlink: NetlinkSocket
    /// The interface being configured (set by ``bringUp(name:mtu:addresses:routes:)``).
    public private(set) var name: String = ""
    /// Its index.
    public private(set) var index: Int32 = 0
    /// Changes made so far, in order (what ``tearDown()`` will undo).
    public private(set) var journal: [Step] = []

    /// Opens the rtnetlink socket.
    public init() throws(SystemError) {
        netlink = try NetlinkSocket()
    }

    /// Configures interface `name`; see the type's documentation. On error nothing stays changed.
    /// - Parameters:
    ///   - mtu: the MTU to set (the kernel refuses values outside the device's range with EINVAL).
    ///   - addresses: addresses with their subnet lengths, e.g. `10.99.0.1/24`, `fd99::1/64`.
    ///   - routes: extra prefixes to route into the interface; pass only prefixes outside the
    ///     addresses' subnets (``InterfaceAddress/routesOutsideSubnets(_:of:)``), the kernel routes
    ///     those itself.
    public func bringUp(name: String, mtu: Int, addresses: [InterfaceAddress], routes: [IPPrefix]) throws(SystemError) {
        precondition(journal.isEmpty, "bringUp called twice without tearDown")
        self.name = name
        do throws(SystemError) {
            let link = try netlink.link(named: name)
            index = link.index
            guard let newMTU = UInt32(exactly: mtu) else { throw SystemError("netlink: set mtu \(mtu) on \(name)", errno: EINVAL) }
            if newMTU != link.mtu {
                try netlink.request("netlink: set mtu \(mtu) on \(name)") {
                    NetlinkMessage.setMTU(into: $0, sequence: $1, index: index, mtu: newMTU)
                }
                journal.append(.mtu(old: link.mtu, new: newMTU))
            }
            for a in addresses {
                try netlink.request("netlink: add address \(a) on \(name)") {
                    NetlinkMessage.address(into: $0, sequence: $1, add: true, index: index, address: a)
                }
                journal.append(.address(a))
            }
            if !link.isUp {
                try netlink.request("netlink: set link up \(name)") {
                    NetlinkMessage.setUp(into: $0, sequence: $1, index: index, up: true)
                }
                journal.append(.up)
            }
            for r in routes {
                try netlink.request("netlink: add route \(r) dev \(name)") {
                    NetlinkMessage.route(into: $0, sequence: $1, add: true, index: index, prefix: r)
                }
                journal.append(.route(r))
            }
        } catch {
            _ = tearDown()
            throw error
        }
    }

    /// Makes the routes this configurator added equal `wanted` (after ``bringUp(name:mtu:addresses:routes:)``):
    /// adds the missing ones, deletes the ones no longer wanted, and journals both, so
    /// ``tearDown()`` still undoes exactly what is there. A route that already exists (EEXIST,
    /// someone else's) is left alone and not journaled; one already gone (ESRCH) counts as
    /// deleted. Returns the routes added and deleted, and the failures (it keeps going past them).
    @discardableResult
    public func syncRoutes(_ wanted: [IPPrefix]) -> (added: [IPPrefix], deleted: [IPPrefix], errors: [SystemError]) {
        let want = Set(wanted)
        var have = Set<IPPrefix>()
        for case .route(let r) in journal { have.insert(r) }
        var added: [IPPrefix] = [], deleted: [IPPrefix] = [], errors: [SystemError] = []
        for r in have where !want.contains(r) {
            do throws(SystemError) {
                try netlink.request("netlink: delete route \(r) dev \(name)") {
                    NetlinkMessage.route(into: $0, sequence: $1, add: false, index: index, prefix: r)
                }
                deleted.append(r)
            } catch {
                if error.errno == ESRCH { deleted.append(r) } else { errors.append(error); continue }
            }
            journal.removeAll { $0 == .route(r) }
        }
        for r in wanted where !have.contains(r) && !added.contains(r) {
            do throws(SystemError) {
                try netlink.request("netlink: add route \(r) dev \(name)") {
                    NetlinkMessage.route(into: $0, sequence: $1, add: true, index: index, prefix: r)
                }
                journal.append(.route(r))
                added.append(r)
            } catch {
                if error.errno != EEXIST { errors.append(error) }
            }
        }
        return (added, deleted, errors)
    }

    /// The order ``tearDown()`` undoes the journal in: routes, then addresses (each newest first),
    /// then link down, then the MTU.
    public var undoOrder: [Step] {
        func rank(_ s: Step) -> Int {
            switch s {
            case .route: return 0
            case .address: return 1
            case .up: return 2
            case .mtu: return 3
            }
        }
        return journal.reversed().enumerated().sorted { (rank($0.1), $0.0) < (rank($1.1), $1.0) }.map(\.1)
    }

    /// Undoes every journaled change (in ``undoOrder``) and empties the journal. Keeps going past
    /// failures and returns them (an interface that vanished meanwhile yields ENODEV errors).
    @discardableResult
    public func tearDown() -> [SystemError] {
        var errors: [SystemError] = []
        for step in undoOrder {
            do {
                switch step {
                case .route(let r):
                    try netlink.request("netlink: delete route \(r) dev \(name)") {
                        NetlinkMessage.route(into: $0, sequence: $1, add: false, index: index, prefix: r)
                    }
                case .up:
                    try netlink.request("netlink: set link down \(name)") {
                        NetlinkMessage.setUp(into: $0, sequence: $1, index: index, up: false)
                    }
                case .address(let a):
                    try netlink.request("netlink: delete address \(a) on \(name)") {
                        NetlinkMessage.address(into: $0, sequence: $1, add: false, index: index, address: a)
                    }
                case .mtu(let old, _):
                    try netlink.request("netlink: restore mtu \(old) on \(name)") {
                        NetlinkMessage.setMTU(into: $0, sequence: $1, index: index, mtu: old)
                    }
                }
            } catch {
                switch (step, error.errno) {
                case (.route, ESRCH), (.address, EADDRNOTAVAIL): break  // already gone
                default: errors.append(error)
                }
            }
        }
        journal.removeAll()
        return errors
    }
}
