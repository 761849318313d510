// The per-peer handshake in progress and the replay/flood memory of accepted initiations.
import Core

/// One peer's handshake state (whitepaper §5.4): the pending initiation we sent, if any, and what we
/// remember about the peer's initiations. Secrets (chaining key, hash, ephemeral private key) live
/// in a `SecretBuffer` wiped when the handshake ends. Guarded by the peer's mutex.
struct HandshakeState {
    /// True while an initiation we sent waits for its response.
    var initiationSent = false
    /// Our index for the pending initiation (registered in the index table while `initiationSent`).
    var localIndex: UInt32 = 0
    /// Bytes 0..<32 chaining key, 32..<64 hash, 64..<96 ephemeral private key; allocated the
    /// first time we initiate (a gateway mostly responds, and most of 10,000 configured peers
    /// never see an initiation from it), kept and wiped after.
    private(set) var secrets: SecretBuffer?

    /// ``secrets``, allocated if this is the first initiation.
    mutating func pendingSecrets() -> SecretBuffer {
        if let s = secrets { return s }
        let s = SecretBuffer.zeroed(count: 96)
        secrets = s
        return s
    }
    /// The newest TAI64N accepted from this peer; older or equal ones are replays.
    var lastTimestamp = TAI64N.zero
    /// When we last accepted an initiation from this peer (flood limit).
    var lastInitiationConsumption: UInt64?
    /// When we last sent an initiation (at most one per REKEY_TIMEOUT).
    var lastSentHandshake: UInt64?

    /// Forgets the pending initiation and wipes its secrets (the replay memory stays).
    mutating func clearPending() {
        initiationSent = false
        localIndex = 0
        secrets?.clear()
    }
}
