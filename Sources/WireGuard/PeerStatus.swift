// A snapshot of one peer for `wg show`-style reporting.

/// Read-only view of a peer (for UAPI `get`, the control socket and tests).
public struct PeerStatus: Equatable, Sendable {
    public var handle: PeerHandle
    public var publicKey: PublicKey
    public var endpoint: Endpoint?
    /// Monotonic time (ns) of the last completed handshake, if any.
    public var lastHandshake: UInt64?
    public var rxBytes: UInt64
    public var txBytes: UInt64
    public var persistentKeepaliveSeconds: UInt16
    public var hasPresharedKey: Bool
    /// True when a current session key exists (it may still be expired at a given time).
    public var hasCurrentKeypair: Bool
    /// True while a responder's session waits for the peer's first packet.
    public var hasNextKeypair: Bool
    public var hasPreviousKeypair: Bool
    public var refused: Bool
}
