import Core
import Packet

/// The changes a `set=1` operation asks for one peer (the lines after its `public_key=`), in the
/// protocol's meaning (https://www.wireguard.com/xplatform/, wireguard-go `handlePeerLine`).
public struct UAPIPeerUpdate: Hashable, Sendable {
    /// Which peer (created unless `updateOnly`).
    public var publicKey: WireGuardKey
    /// `remove=true`: remove the peer; the other fields are then meaningless.
    public var remove: Bool = false
    /// `update_only=true`: change the peer only if it exists; never create it.
    public var updateOnly: Bool = false
    /// `preshared_key=`: new preshared key (all zeros = none).
    public var presharedKey: WireGuardKey?
    /// `endpoint=`: new endpoint (IP literal and port).
    public var endpoint: HostPort?
    /// `persistent_keepalive_interval=`: seconds, 0 = off.
    public var persistentKeepaliveInterval: UInt16?
    /// `replace_allowed_ips=true`: drop the existing AllowedIPs before adding `allowedIPs`.
    public var replaceAllowedIPs: Bool = false
    /// `allowed_ip=` lines, in order (host bits cleared).
    public var allowedIPs: [IPPrefix] = []
    /// `protocol_version=` (only 1 is accepted).
    public var protocolVersion: Int?

    /// An update touching nothing but naming the peer.
    public init(publicKey: WireGuardKey) {
        self.publicKey = publicKey
    }
}
