// Protocol constants (whitepaper §6) apart from implementation constants.
import Core

/// Protocol constants from the WireGuard whitepaper §5.4 and §6, as wireguard-go's `constants.go`
/// and the kernel's `messages.h` define them. Times are in nanoseconds.
public enum WireGuardProtocol {
    /// Noise construction string, hashed into the initial chaining key.
    public static let construction = Array("Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s".utf8)
    /// Protocol identifier, mixed into the initial hash.
    public static let identifier = Array("WireGuard v1 zx2c4 Jason@zx2c4.com".utf8)
    /// Label for the mac1 key: `HASH(LABEL_MAC1 ‖ S_pub)`.
    public static let labelMAC1 = Array("mac1----".utf8)
    /// Label for the cookie encryption key: `HASH(LABEL_COOKIE ‖ S_pub)`.
    public static let labelCookie = Array("cookie--".utf8)

    /// After this many messages with one keypair the sender starts a new handshake.
    public static let rekeyAfterMessages: UInt64 = 1 << 60
    /// No keypair is used for more messages than this (2^64 − 2^13 − 1).
    public static let rejectAfterMessages: UInt64 = UInt64.max - (1 << 13)
    /// An initiator rekeys when its current keypair is this old.
    public static let rekeyAfterTime: UInt64 = 120 * second
    /// A keypair is never used after this age.
    public static let rejectAfterTime: UInt64 = 180 * second
    /// Initiations are retried for this long before giving up.
    public static let rekeyAttemptTime: UInt64 = 90 * second
    /// An unanswered initiation is retried after this (plus jitter).
    public static let rekeyTimeout: UInt64 = 5 * second
    /// Upper bound (exclusive) of the random jitter added to REKEY_TIMEOUT, in milliseconds.
    public static let rekeyTimeoutJitterMaxMilliseconds: UInt32 = 334
    /// A keepalive is sent this long after receiving data without sending any.
    public static let keepaliveTimeout: UInt64 = 10 * second
    /// Cookie secrets rotate, and received cookies expire, after this.
    public static let cookieRefreshTime: UInt64 = 120 * second
    /// Minimum spacing between two initiations accepted from one peer (50 per second).
    public static let handshakeInitiationRate: UInt64 = second / 50
    /// Transport plaintext is zero-padded to a multiple of this.
    public static let paddingMultiple = 16
    /// Retries before the handshake gives up: REKEY_ATTEMPT_TIME / REKEY_TIMEOUT.
    public static let maxTimerHandshakes = 18

    /// One second in nanoseconds.
    public static let second: UInt64 = 1_000_000_000
}
