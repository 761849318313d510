import Core
/// The whole of `tunneld.conf`: one `[Interface]` and any number of `[Peer]` sections
/// (tunneld.conf(5)). Produced by `TunnelConfig.parse` (pure) or `TunnelConfig.load` (reads the file
/// and any `PrivateKeyFile`, checking its permissions).
public struct TunnelConfig: Hashable, Sendable {
    /// The `[Interface]` section.
    public var interface: InterfaceConfig
    /// The `[Peer]` sections in file order.
    public var peers: [PeerConfig]
    /// The tier classes: `free` and `premium` plus every `[Tier NAME]` section, with the free
    /// window of `FreeSession`/`FreePause` (`TierClasses`, docs/limits.md).
    public var tiers: TierClasses
    /// Problems that do not stop the daemon (overlapping AllowedIPs, host bits set in a prefix,
    /// a peer without AllowedIPs). `tunneld --check-config` prints them.
    public var warnings: [ConfigError]
    /// Remarks that are not problems: wg-quick keys accepted as they are (`SaveConfig`, `Table`,
    /// hooks), names taken from comments. `tunneld --check-config` prints them as notes.
    public var notes: [ConfigError]

    /// A config from its parts.
    public init(interface: InterfaceConfig, peers: [PeerConfig], tiers: TierClasses? = nil, warnings: [ConfigError] = [],
                notes: [ConfigError] = [])
    {
        self.interface = interface
        self.peers = peers
        self.tiers = tiers ?? interface.tierClasses()
        self.warnings = warnings
        self.notes = notes
    }

    /// The default config file path (tunneld(8), FILES).
    public static let defaultPath = "/etc/tunnelvision/tunneld.conf"

    /// The peer called `name`, if any.
    public func peer(named name: String) -> PeerConfig? { peers.first { $0.name == name } }

    /// The `DNS` line of `peer`'s client config: its own `ClientDNS`, else the `[Interface]`'s
    /// (empty: no line). The one rule `peer add|config|qr` and the policy's gateway check follow.
    public func clientDNS(of peer: PeerConfig) -> [String] {
        peer.clientDNS.isEmpty ? interface.clientDNS : peer.clientDNS
    }

    /// The limits in force for `peer` under tier `tier` (its configured one unless overridden).
    public func limits(of peer: PeerConfig, tier: PeerTier? = nil) -> PeerLimits {
        tiers.resolve(tier: tier ?? peer.tier, peer: peer.limits)
    }
}
