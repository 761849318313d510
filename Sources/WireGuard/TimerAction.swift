// What `tick(now:)` asks the I/O shell to do.
import Core

/// An action returned by `WireGuardDevice.tick(now:)`.
public enum TimerAction: Equatable, Sendable {
    /// Build and send an initiation: call `initiation(for: peer, retry: retry, …)`.
    case sendInitiation(peer: PeerHandle, retry: Bool)
    /// Send a keepalive: call `encrypt(peer:…)` with an empty payload (never queue it).
    case sendKeepalive(peer: PeerHandle)
    /// Retries ran out (REKEY_ATTEMPT_TIME): drop the packets queued for `peer`.
    case handshakeGaveUp(peer: PeerHandle)
    /// All of `peer`'s keys were erased (3 × REJECT_AFTER_TIME without a new session).
    case keysZeroed(peer: PeerHandle)
}
