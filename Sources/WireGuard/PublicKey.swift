// A 32-byte Curve25519 public key as a hashable value.
import Core

/// A peer's or our own Curve25519 public key (32 bytes). Public keys are not secret, so this is a
/// plain value; private keys and pre-shared keys live in zeroed `SecretBuffer`s instead.
public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// A key from exactly 32 bytes; nil otherwise.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// A key from its standard base64 text (as `wg` prints it); nil when it is not 32 bytes of base64.
    public init?(base64: String) {
        guard let k = WireGuardKey(base64: base64) else { return nil }
        bytes = k.bytes
    }

    /// Standard base64 (44 characters), as WireGuard tools show keys.
    public var base64: String { WireGuardKey(bytes: bytes)!.base64 }

    /// The base64 form.
    public var description: String { base64 }
}
