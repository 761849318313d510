import Core
/// Why a UDP datagram that looked like a QUIC Initial taught us nothing: one countable reason
/// per case (the daemon keeps a counter per case, indexed by `rawValue`).
public enum QUICFailure: UInt8, CaseIterable, Sendable, CustomStringConvertible {
    /// The datagram ends inside the long header, the token, the length or the sample.
    case truncated
    /// A connection ID longer than 20 bytes (RFC 9000 §17.2), or a DCID shorter than 8 bytes
    /// in a client's Initial (§7.2).
    case badConnectionID
    /// The Length field reaches past the datagram, or leaves no room for the packet number and
    /// the AEAD tag.
    case badLength
    /// AES-128-GCM authentication failed: not a client Initial for this DCID (wrong keys, a
    /// server's Initial, garbage).
    case decryptionFailed
    /// An unknown or broken frame in the decrypted payload (only PADDING, PING, ACK, CRYPTO
    /// and CONNECTION_CLOSE may appear in an Initial, RFC 9000 §12.4).
    case badFrame
    /// libcrypto could not run (a context failed to set up): nothing to do with the packet.
    case cryptoUnavailable

    /// The counter name.
    public var description: String {
        switch self {
        case .truncated: return "truncated"
        case .badConnectionID: return "bad-connection-id"
        case .badLength: return "bad-length"
        case .decryptionFailed: return "decryption-failed"
        case .badFrame: return "bad-frame"
        case .cryptoUnavailable: return "crypto-unavailable"
        }
    }
}
