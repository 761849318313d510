// A snapshot of one peer for `wg show`-style reporting.
import Core

/// Read-only view of a peer (for UAPI `get`, the control socket and tests).
public struct PeerStatus: Equatable, Sendable {
    /// The peer's handle.
    public var handle: PeerHandle
    /// The peer's static public key.
    public var publicKey: PublicKey
    /// Last known endpoint (configured or learnt).
    public var endpoint: Endpoint?
    /// Monotonic time (ns) of the last completed handshake, if any.
    public var lastHandshake: UInt64?
    /// Bytes of authenticated datagrams received from the peer.
    public var rxBytes: UInt64
    /// Bytes of datagrams sent to the peer.
    public var txBytes: UInt64
    /// Persistent keepalive interval (0 = off).
    public var persistentKeepaliveSeconds: UInt16
    /// True when a non-zero pre-shared key is configured.
    public var hasPresharedKey: Bool
    /// True when a current session key exists (it may still be expired at a given time).
    public var hasCurrentKeypair: Bool
    /// True while a responder's session waits for the peer's first packet.
    public var hasNextKeypair: Bool
    /// True while the previous session (for in-flight packets) is kept.
    public var hasPreviousKeypair: Bool
    /// True while the gateway refuses the peer.
    public var refused: Bool
}
