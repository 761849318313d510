// Why a received datagram was dropped: typed, countable.
import Core

/// Why `WireGuardDevice.receive` dropped a datagram. Each case is counted by the device
/// (`dropCount(_:)`) so the gateway can export the counters.
public enum DropReason: Int, Error, CaseIterable, Sendable, CustomStringConvertible {
    /// The first four bytes are not a known message type (1–4 followed by three zero bytes).
    case unknownType
    /// The length does not match the message type (148, 92, 64, or ≥ 32 for transport).
    case badLength
    /// mac1 does not verify against our public key (not meant for us, or corrupted).
    case badMAC1
    /// Under load without a valid mac2, and the source exceeded its initiation rate.
    case rateLimited
    /// A handshake message's AEAD (encrypted static, timestamp or empty payload) did not verify.
    case handshakeDecryptFailed
    /// The initiator's static key is not a configured peer.
    case unknownPeer
    /// The initiation's TAI64N timestamp is not newer than the last accepted one from that peer.
    case replayedTimestamp
    /// The peer sent initiations faster than 50 per second.
    case initiationFlood
    /// A Diffie-Hellman result was all zeros (a low-order public key).
    case invalidPublicKey
    /// The receiver index names no handshake or session of ours.
    case unknownReceiverIndex
    /// A response arrived for a handshake that is not waiting for one.
    case unexpectedResponse
    /// A cookie reply did not decrypt, or we sent nothing it could answer.
    case invalidCookieReply
    /// A transport message's Poly1305 tag did not verify.
    case badTag
    /// The transport counter was already seen or is older than the replay window.
    case replayedCounter
    /// The keypair is older than REJECT_AFTER_TIME or used for REJECT_AFTER_MESSAGES messages.
    case expiredKeypair
    /// The decrypted packet is not a well-formed IPv4/IPv6 packet (bad version or length).
    case invalidInnerPacket
    /// The caller's output buffer is too small for the reply.
    case outputTooSmall

    /// A short kebab-case name for logs and counters (`bad-mac1`).
    public var description: String {
        switch self {
        case .unknownType: "unknown-type"
        case .badLength: "bad-length"
        case .badMAC1: "bad-mac1"
        case .rateLimited: "rate-limited"
        case .handshakeDecryptFailed: "handshake-decrypt-failed"
        case .unknownPeer: "unknown-peer"
        case .replayedTimestamp: "replayed-timestamp"
        case .initiationFlood: "initiation-flood"
        case .invalidPublicKey: "invalid-public-key"
        case .unknownReceiverIndex: "unknown-receiver-index"
        case .unexpectedResponse: "unexpected-response"
        case .invalidCookieReply: "invalid-cookie-reply"
        case .badTag: "bad-tag"
        case .replayedCounter: "replayed-counter"
        case .expiredKeypair: "expired-keypair"
        case .invalidInnerPacket: "invalid-inner-packet"
        case .outputTooSmall: "output-too-small"
        }
    }
}
