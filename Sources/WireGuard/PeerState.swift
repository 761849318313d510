// Everything about one peer that changes, guarded by the peer's mutex.
import Core

/// The mutable state of one peer. Lives inside `Peer.state` (a `Mutex`); every access holds it.
struct PeerState {
    /// 32 bytes; all zeros when the peer has no pre-shared key (Noise uses zeros then).
    var presharedKey: SecretBuffer
    /// `DH(our static private, peer static public)`, precomputed; zeros if the key is invalid.
    let staticStatic: SecretBuffer
    // mac1 and cookie keys for this peer are derived from its public key when a handshake message
    // is sent or a cookie reply arrives (`addMACsLocked`, `receiveCookieReply`), not stored.
    /// Persistent keepalive interval in nanoseconds (0 = off).
    var persistentKeepalive: UInt64
    /// Where the peer was last heard from (or configured).
    var endpoint: Endpoint?
    /// Set by the gateway: the peer's handshakes are answered with `.refused`, not processed.
    var refused = false
    /// Set by `removePeer`; a handshake finishing concurrently must not install keys afterwards.
    var removed = false

    var handshake = HandshakeState()
    var current: Keypair?
    var previous: Keypair?
    var next: Keypair?

    /// The cookie the peer last sent us (mac2 key) and when.
    var cookie: [UInt8]?
    var cookieSetAt: UInt64 = 0
    /// mac1 of the last handshake message we sent (the AD of a cookie reply to it).
    var lastMAC1: [UInt8]?

    var timers = PeerTimers()
    /// Monotonic time of the last completed handshake.
    var lastHandshake: UInt64?
}
