// What the gateway configures for one peer.
import Core

/// A peer as configured: its public key, optional pre-shared key, optional persistent keepalive
/// interval and optional initial endpoint (`wg set … peer … preshared-key … persistent-keepalive …`).
public struct PeerConfiguration: Sendable {
    /// The peer's static public key (its identity).
    public var publicKey: PublicKey
    /// 32-byte pre-shared key mixed into the handshake (Noise `psk2`), or nil for none.
    public var presharedKey: [UInt8]?
    /// Seconds between keepalives when otherwise idle; 0 turns persistent keepalive off.
    public var persistentKeepaliveSeconds: UInt16
    /// Where to send before the peer has been heard from; learnt from authenticated packets after.
    public var endpoint: Endpoint?

    /// A configuration; only the public key is required.
    public init(publicKey: PublicKey, presharedKey: [UInt8]? = nil, persistentKeepaliveSeconds: UInt16 = 0,
                endpoint: Endpoint? = nil)
    {
        self.publicKey = publicKey
        self.presharedKey = presharedKey
        self.persistentKeepaliveSeconds = persistentKeepaliveSeconds
        self.endpoint = endpoint
    }
}
