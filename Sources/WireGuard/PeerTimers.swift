// The five per-peer timers of WireGuard as deadlines, plus their event hooks (whitepaper §6).
import Core

/// Per-peer timer state: each timer is an optional monotonic deadline in nanoseconds, armed and
/// cleared by the event hooks below and fired by `WireGuardDevice.tick(now:)`. Mirrors
/// wireguard-go `device/timers.go` one hook for one hook. Guarded by the peer's mutex.
struct PeerTimers {
    /// Resend an unanswered initiation (REKEY_TIMEOUT + jitter after sending one).
    var retransmitHandshake: UInt64?
    /// Send a keepalive if we received data and sent nothing for KEEPALIVE_TIMEOUT.
    var sendKeepalive: UInt64?
    /// Start a handshake if we sent data and heard nothing for KEEPALIVE_TIMEOUT + REKEY_TIMEOUT.
    var newHandshake: UInt64?
    /// Erase all key material 3 × REJECT_AFTER_TIME after the last session was derived.
    var zeroKeyMaterial: UInt64?
    /// Send a keepalive after the persistent-keepalive interval without authenticated traffic.
    var persistentKeepalive: UInt64?

    var handshakeAttempts = 0
    var needAnotherKeepalive = false
    /// Re-arm `sendKeepalive` when the keepalive the tick asked for is actually sent.
    var rearmKeepaliveOnSend = false
    var sentLastMinuteHandshake = false
    /// The data path asked for a new handshake (rekey on age/messages, or no key); the next tick
    /// reports `.sendInitiation`.
    var wantInitiation = false

    /// Call after sending a data (non-keepalive) packet.
    mutating func dataSent(now: UInt64, jitter: UInt64) {
        if newHandshake == nil {
            newHandshake = now + WireGuardProtocol.keepaliveTimeout + WireGuardProtocol.rekeyTimeout + jitter
        }
    }

    /// Call after receiving a data (non-keepalive) packet.
    mutating func dataReceived(now: UInt64) {
        if sendKeepalive == nil {
            sendKeepalive = now + WireGuardProtocol.keepaliveTimeout
        } else {
            needAnotherKeepalive = true
        }
    }

    /// Call after sending any authenticated packet (keepalive, data or handshake).
    mutating func anyAuthenticatedPacketSent(now: UInt64) {
        sendKeepalive = nil
        if rearmKeepaliveOnSend {
            rearmKeepaliveOnSend = false
            sendKeepalive = now + WireGuardProtocol.keepaliveTimeout
        }
    }

    /// Call after receiving any authenticated packet.
    mutating func anyAuthenticatedPacketReceived() { newHandshake = nil }

    /// Call after sending an initiation.
    mutating func handshakeInitiated(now: UInt64, jitter: UInt64) {
        retransmitHandshake = now + WireGuardProtocol.rekeyTimeout + jitter
    }

    /// Call after a response is consumed, or when the first data confirms a responder's session.
    mutating func handshakeComplete() {
        retransmitHandshake = nil
        handshakeAttempts = 0
        sentLastMinuteHandshake = false
    }

    /// Call after a new ephemeral key is created (before sending a response or after consuming one).
    mutating func sessionDerived(now: UInt64) {
        zeroKeyMaterial = now + 3 * WireGuardProtocol.rejectAfterTime
    }

    /// Call before sending, or after receiving, any authenticated packet.
    mutating func anyAuthenticatedPacketTraversal(now: UInt64, persistentInterval: UInt64) {
        if persistentInterval > 0 { persistentKeepalive = now + persistentInterval }
    }

    /// Disarms everything (peer removed, keys dropped by the gateway).
    mutating func stopAll() { self = PeerTimers() }
}
