import Config
import Core
import Engine
import Packet
import Runtime
import Synchronization
import SystemIO

/// The kernel routes of tunneld's interface for peers' AllowedIPs outside its subnets (wg-quick's
/// `add_route`; `Table = off|auto` is accepted and means the same, docs/peers.md). At start the
/// configurator's `bringUp` adds them; after every change of the peers (reload, `wg set`,
/// `tunnelctl peer …`) ``sync(_:)`` adds the new ones and deletes the ones no peer needs any
/// more. `InterfaceAddress.routesOutsideSubnets` is the one rule for which prefixes need a route.
final class InterfaceRoutes: Sendable {
    private let configurator: Mutex<NetlinkInterfaceConfigurator>
    let addresses: [InterfaceAddress]
    let log: Logger

    /// Takes over `configurator` after its `bringUp`.
    init(_ configurator: sending NetlinkInterfaceConfigurator, addresses: [InterfaceAddress], log: Logger) {
        self.configurator = Mutex(configurator)
        self.addresses = addresses
        self.log = log
    }

    /// The routes the peers' AllowedIPs need on an interface with `addresses`.
    static func wanted(_ allowedIPs: [IPPrefix], addresses: [InterfaceAddress]) -> [IPPrefix] {
        InterfaceAddress.routesOutsideSubnets(allowedIPs, of: addresses)
    }

    /// Makes the interface's routes those `directory`'s peers need; logs what changed.
    func sync(_ directory: PeerDirectory) {
        let wanted = Self.wanted(directory.all.flatMap(\.allowedIPs), addresses: addresses)
        let r = configurator.withLock { $0.syncRoutes(wanted) }
        for p in r.added { log.info("interface: route \(p) added") }
        for p in r.deleted { log.info("interface: route \(p) deleted") }
        for e in r.errors { log.warning("interface: \(e)") }
    }

    /// The bring-up journal (for the start log).
    var journal: [NetlinkInterfaceConfigurator.Step] { configurator.withLock { $0.journal } }

    /// Undoes everything (routes, addresses, link up, MTU); returns the failures.
    func tearDown() -> [SystemError] { configurator.withLock { $0.tearDown() } }
}
