// What the caller must do after asking the device to build an outgoing message.
import Core

/// The outcome of `WireGuardDevice.encrypt` and `WireGuardDevice.initiation`.
public enum SendResult: Equatable, Sendable {
    /// Send the buffer's bytes at `range` to `endpoint`.
    case send(range: Range<Int>, to: Endpoint)
    /// The message was built (and timers updated), but the peer has no known endpoint yet.
    case noEndpoint(range: Range<Int>)
    /// No usable session key: queue the packet and call `initiation(for:)` (also reported by `tick`).
    case handshakeNeeded
    /// `initiation(for:)` only: an initiation went out less than REKEY_TIMEOUT ago; wait for it.
    case handshakeInProgress
    /// The gateway refuses this peer (`setRefused`); nothing was built.
    case refused
    /// No peer has this handle.
    case unknownPeer
    /// The buffer cannot hold the message (see `WireGuardDevice.encrypt` for the sizes).
    case bufferTooSmall
}
