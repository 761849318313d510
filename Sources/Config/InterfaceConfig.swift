import Core
import Packet

/// The `[Interface]` section of `tunneld.conf` (tunneld.conf(5)), with defaults applied.
public struct InterfaceConfig: Hashable, Sendable {
    /// Where the private key came from.
    public enum PrivateKeySource: Hashable, Sendable {
        /// `PrivateKey = <base64>` in the config file itself.
        case inline
        /// `PrivateKeyFile = PATH` (absolute after loading; relative paths are resolved against the
        /// config file's directory).
        case file(String)
    }

    /// Interface name (`Name`, default `tv0`): 1–15 characters of `[A-Za-z0-9_=+.-]` (IFNAMSIZ).
    public var name: String = "tv0"
    /// The interface's static private key. Nil only between `parse` (when it names a
    /// `PrivateKeyFile`) and `load`, which reads the file.
    public var privateKey: WireGuardKey?
    /// Where `privateKey` comes from.
    public var privateKeySource: PrivateKeySource = .inline
    /// UDP port to listen on (`ListenPort`, default 51820).
    public var listenPort: UInt16 = 51820
    /// `SO_MARK` for outgoing UDP packets (`FwMark`, decimal or `0x` hex; absent or `off` = none).
    public var fwMark: UInt32?
    /// Interface addresses (`Address`, comma-separated, may repeat; at least one required).
    public var addresses: [InterfaceAddress] = []
    /// Interface MTU (`MTU`, default 1420 like wg-quick; 576...65535, ≥ 1280 with an IPv6 address).
    public var mtu: Int = 1420
    /// Durable state (`StateDirectory`, default `/var/lib/tunnelvision`): `state.db`, `capture/`.
    public var stateDirectory: String = "/var/lib/tunnelvision"
    /// Runtime files (`RuntimeDirectory`, default `/run/tunnelvision`): `control.sock`, `live.ring`.
    public var runtimeDirectory: String = "/run/tunnelvision"
    /// Policy rule files (`PolicyDirectory`, default `/etc/tunnelvision/policies`).
    public var policyDirectory: String = "/etc/tunnelvision/policies"
    /// Free tier: connected time per window (`FreeSession`, default 15m).
    public var freeSession: Duration = .seconds(15 * 60)
    /// Free tier: pause after the window (`FreePause`, default 45m).
    public var freePause: Duration = .seconds(45 * 60)
    /// Watchdog tick (`WatchdogInterval`, default 5s; 100ms...1h).
    public var watchdogInterval: Duration = .seconds(5)
    /// Group allowed to use the control socket (`ControlGroup`, optional): the socket becomes
    /// mode 0660 owned by this group instead of 0600.
    public var controlGroup: String?

    /// The `host:port` clients reach the gateway at (`PublicEndpoint`, optional): the `Endpoint` of
    /// the client configs `tunnelctl peer add|config|qr` print.
    public var publicEndpoint: HostPort?
    /// Where to serve Prometheus `/metrics` over HTTP (`MetricsListen`, e.g. `127.0.0.1:9586`;
    /// default off). An address, not a host name: the operator chooses who can reach it.
    public var metricsListen: Endpoint?
    /// Where to serve each peer its own status page (`StatusListen`, e.g. `10.99.0.1:80`; default
    /// off): an address inside the tunnel; a request is answered with the state of the peer its
    /// inner source address belongs to (cryptokey routing), never anything the client claims.
    public var statusListen: Endpoint?
    /// Where the facts gateways share live (`Store`): `local` (the default: `state.db`
    /// in `StateDirectory`, one router) or a PostgreSQL connection string shared by many gateways.
    public var store: SharedStoreSetting = .local
    /// A libpq password file for `Store` (`StorePassFile`; the `passfile` connection parameter):
    /// the password never appears in this file.
    public var storePassFile: String?
    /// This gateway's name in the shared store (`GatewayName`, 1–64 of `[A-Za-z0-9_.-]`; default
    /// the host name): recorded on every row it ships, shown by `flows|sessions|timeline`.
    public var gatewayName: String?
    /// The name this gateway goes by: `GatewayName`, else the host name (both binaries use this).
    public var gatewayNameInForce: String { gatewayName ?? SharedStoreSetting.defaultGatewayName() }
    /// Tier of a peer added over the UAPI (`wg set`) without one (`DefaultTier`, default `free`).
    public var defaultTier: PeerTier = .free
    /// `QUIC`: what a UDP/443 flow whose host name cannot be read gets when a `host` rule could
    /// decide it: `inspect` (decided without a host) or `block-unknown` (blocked).
    public var quic: String = "inspect"
    /// `HostWait`: how long a flow waits for its host name before it is decided without one.
    public var hostWait: Duration = .seconds(1)
    /// `DNSTTLFloor` / `DNSTTLCeiling`: the DNS TTLs honoured for names learned from answers.
    public var dnsTTLFloor: Duration = .seconds(60)
    public var dnsTTLCeiling: Duration = .seconds(86_400)
    /// The resolvers (and search domains) every client config gets as its `DNS` line
    /// (`ClientDNS`; default none): `tunnelctl peer add|config|qr` write it, a peer's own
    /// `ClientDNS` replaces it. Usually the gateway's tunnel address with a resolver (dnsmasq,
    /// unbound) answering there; `tunnelctl init` sets it so when one listens.
    public var clientDNS: [String] = []
    /// wg-quick's `DNS`, as written: on a wg-quick server it sets that machine's own resolver,
    /// so tunneld accepts it with a warning and uses it for nothing (the clients' is `ClientDNS`).
    public var dns: [String] = []

    /// The gateway's own tunnel addresses (`Address`, without prefix lengths): what `gateway` in
    /// the policy rules stands for (`PolicySet.bindingGateway`), in tunneld and in tunnelctl.
    public var gatewayAddresses: [IPAddress] { addresses.map(\.address) }
    /// wg-quick's `SaveConfig` (accepted, with a note; tunneld never writes the file on stop).
    public var saveConfig: Bool?
    /// wg-quick's `Table` (`off` or `auto` only; tunneld adds its routes to the main table).
    public var table: String?
    /// wg-quick's hooks, in file order, `%i` not yet replaced: commands the daemon runs through
    /// `/bin/sh -c` before bring-up, after it, before tear-down and after it (repeatable keys).
    public var preUp: [String] = []
    /// See `preUp`.
    public var postUp: [String] = []
    /// See `preUp`.
    public var preDown: [String] = []
    /// See `preUp`.
    public var postDown: [String] = []

    /// All defaults (no key, no address).
    public init() {}

    /// `RuntimeDirectory/control.sock`.
    public var controlSocketPath: String { runtimeDirectory + "/control.sock" }
    /// `StateDirectory/state.db`.
    public var storePath: String { stateDirectory + "/state.db" }
    /// `RuntimeDirectory/live.ring`.
    public var ringPath: String { runtimeDirectory + "/live.ring" }
}

extension InterfaceConfig {
    /// The tier classes of this `[Interface]` with `classes` (the `[Tier]` sections): `free`'s
    /// window is `FreeSession` then `FreePause`. The one place those two keys become a tier; the
    /// watchdog, `session`, `explain` and the status page all resolve through the result.
    public func tierClasses(_ classes: [PeerTier: LimitSettings] = [:]) -> TierClasses {
        TierClasses(freeSessionMs: freeSession.milliseconds, freePauseMs: freePause.milliseconds, classes: classes)
    }
}
