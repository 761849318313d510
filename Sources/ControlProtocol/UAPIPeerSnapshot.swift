import Core
import Packet

/// One peer as the UAPI `get=1` operation reports it (wireguard-go `device/uapi.go`,
/// `IpcGetOperation`).
public struct UAPIPeerSnapshot: Hashable, Sendable {
    /// The peer's public key.
    public var publicKey: WireGuardKey
    /// Its preshared key; nil is sent as all zeros.
    public var presharedKey: WireGuardKey?
    /// The current endpoint (an IP literal and port), if known.
    public var endpoint: HostPort?
    /// Last completed handshake, seconds part of Unix time (0 = never).
    public var lastHandshakeSec: Int64
    /// Last completed handshake, nanoseconds part.
    public var lastHandshakeNsec: Int64
    /// Bytes sent to the peer.
    public var txBytes: UInt64
    /// Bytes received from the peer.
    public var rxBytes: UInt64
    /// Persistent keepalive in seconds (0 = off).
    public var persistentKeepaliveInterval: UInt16
    /// AllowedIPs.
    public var allowedIPs: [IPPrefix]

    /// A peer snapshot from its fields.
    public init(
        publicKey: WireGuardKey, presharedKey: WireGuardKey? = nil, endpoint: HostPort? = nil, lastHandshakeSec: Int64 = 0,
        lastHandshakeNsec: Int64 = 0, txBytes: UInt64 = 0, rxBytes: UInt64 = 0, persistentKeepaliveInterval: UInt16 = 0,
        allowedIPs: [IPPrefix] = []
    ) {
        self.publicKey = publicKey
        self.presharedKey = presharedKey
        self.endpoint = endpoint
        self.lastHandshakeSec = lastHandshakeSec
        self.lastHandshakeNsec = lastHandshakeNsec
        self.txBytes = txBytes
        self.rxBytes = rxBytes
        self.persistentKeepaliveInterval = persistentKeepaliveInterval
        self.allowedIPs = allowedIPs
    }
}
