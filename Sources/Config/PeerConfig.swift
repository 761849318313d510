import Core
import Packet

/// One `[Peer]` section of `tunneld.conf` (tunneld.conf(5)), with defaults applied.
public struct PeerConfig: Hashable, Sendable {
    /// Unique name: 1–32 characters of `[A-Za-z0-9_.-]`; policy rules and `tunnelctl` refer to the
    /// peer by it. From `Name`, else a name comment above the section (`### Client NAME`,
    /// `### begin NAME ###`, `# Client: NAME`, `# Name = NAME`), else `PeerName.fromKey`.
    public var name: String
    /// The peer's static public key (`PublicKey`, required, unique).
    public var publicKey: WireGuardKey
    /// Optional preshared key (`PresharedKey`) mixed into the handshake (whitepaper §5.4.2).
    public var presharedKey: WireGuardKey?
    /// Inner source addresses the peer may use and destinations routed to it (`AllowedIPs`,
    /// comma-separated, may repeat). Cryptokey routing, whitepaper §2.
    public var allowedIPs: [IPPrefix]
    /// Where to send to before the peer has been heard from (`HostPort`, optional).
    public var endpoint: HostPort?
    /// Keepalive interval in seconds (`PersistentKeepalive`, optional; `off` or 0 = none).
    public var persistentKeepalive: UInt16?
    /// Service tier (`Tier`, default `free`).
    public var tier: PeerTier
    /// The peer's own limit keys (`Session`, `Quota`, `Rate`, …), over its tier's (`LimitResolution`).
    public var limits = LimitSettings()
    /// When the peer stops being admitted (`Expires = DATE|ISO time`, UTC unless a zone is given;
    /// a date alone is 00:00 UTC that day), epoch ms; nil = never.
    public var expiresMs: Int64?
    /// `Disabled = true`: configured but refused (reason `disabled`) until enabled again.
    public var disabled: Bool = false
    /// What `tunnelctl peer add --dns|--endpoint|--allowed-ips` gave for the client's own config
    /// (`ClientDNS`, `ClientEndpoint`, `ClientAllowedIPs`): TunnelVision keys that tunneld itself
    /// ignores; `tunnelctl peer config|qr` print them instead of the `[Interface]` defaults.
    public var clientDNS: [String] = []
    /// See ``clientDNS``.
    public var clientEndpoint: HostPort?
    /// See ``clientDNS``; nil = `0.0.0.0/0, ::/0`.
    public var clientAllowedIPs: [IPPrefix]?
    /// Where `name` came from.
    public var nameOrigin: PeerNameOrigin = .nameKey

    /// A peer from its fields.
    public init(
        name: String, publicKey: WireGuardKey, presharedKey: WireGuardKey? = nil, allowedIPs: [IPPrefix] = [],
        endpoint: HostPort? = nil, persistentKeepalive: UInt16? = nil, tier: PeerTier = .free
    ) {
        self.name = name
        self.publicKey = publicKey
        self.presharedKey = presharedKey
        self.allowedIPs = allowedIPs
        self.endpoint = endpoint
        self.persistentKeepalive = persistentKeepalive
        self.tier = tier
    }
}
