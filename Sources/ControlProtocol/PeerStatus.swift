import Core
/// One peer in the `peers` reply (`tunnelctl peers`, docs/control.md). Times are epoch ms (UTC).
public struct PeerStatus: Hashable, Sendable, Codable {
    /// The peer's configured name.
    public var name: String
    /// Its public key, base64.
    public var publicKey: String
    /// Its tier in force (the registry's: a runtime override, else the configured tier).
    public var tier: PeerTier
    /// The endpoint last heard from (or configured), `host:port`; nil when unknown.
    public var endpoint: String?
    /// Last completed handshake (epoch ms); nil when never.
    public var lastHandshakeMs: Int64?
    /// Bytes received from the peer (decrypted payload, as `wg` counts).
    public var rxBytes: UInt64
    /// Bytes sent to the peer.
    public var txBytes: UInt64
    /// Session state.
    public var session: PeerSessionState
    /// Free tier: end of the connected window (epoch ms), when one is open.
    public var allowedUntilMs: Int64?
    /// Free tier: end of the pause (epoch ms), when one is known.
    public var reconnectAtMs: Int64?
    /// The peer's AllowedIPs (`10.99.0.2/32`).
    public var allowedIPs: [String]
    /// The limits tunneld enforces on the peer (tier and per-peer keys resolved); nil when not
    /// known (a bare WireGuard device, or a daemon older than peer limits).
    public var limits: PeerLimits? = nil
    /// Bytes used in the current window, when the peer has a quota (as of the watchdog's last pass).
    public var quotaUsed: ByteUse? = nil
    /// Its configured tier (`Tier =`); nil from a tunneld that predates it.
    public var configuredTier: PeerTier? = nil
    /// Where ``tier`` comes from: `config`, `admin` (`tunnelctl peer tier` here), `shared` (on
    /// another gateway, through the shared store).
    public var tierOrigin: String? = nil
    /// When the override in force was set (epoch ms); nil: none.
    public var tierSinceMs: Int64? = nil
    /// An override recorded for the peer that lapsed: its tier is not configured.
    public var lapsedTier: PeerTier? = nil

    /// A peer status from its fields.
    public init(
        name: String, publicKey: String, tier: PeerTier, endpoint: String? = nil, lastHandshakeMs: Int64? = nil,
        rxBytes: UInt64 = 0, txBytes: UInt64 = 0, session: PeerSessionState = .disconnected,
        allowedUntilMs: Int64? = nil, reconnectAtMs: Int64? = nil, allowedIPs: [String] = []
    ) {
        self.name = name
        self.publicKey = publicKey
        self.tier = tier
        self.endpoint = endpoint
        self.lastHandshakeMs = lastHandshakeMs
        self.rxBytes = rxBytes
        self.txBytes = txBytes
        self.session = session
        self.allowedUntilMs = allowedUntilMs
        self.reconnectAtMs = reconnectAtMs
        self.allowedIPs = allowedIPs
    }
}
