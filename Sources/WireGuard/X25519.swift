// Curve25519 Diffie-Hellman through libsodium.
import Core
import CSodium

/// X25519 (RFC 7748) as WireGuard's `DH` and `DH_PUBKEY` (whitepaper §5.4).
public enum X25519 {
    /// Key length.
    public static let keySize = 32

    /// The public key of a private key (`crypto_scalarmult_base`; the scalar is clamped by libsodium).
    public static func publicKey(of privateKey: [UInt8]) -> [UInt8] {
        precondition(privateKey.count == 32 && Sodium.ready)
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_scalarmult_base(&out, privateKey)
        return out
    }

    /// The shared secret `DH(private, public)`, or nil when it is all zeros (a low-order point),
    /// which WireGuard rejects.
    public static func sharedSecret(_ privateKey: [UInt8], _ publicKey: [UInt8]) -> [UInt8]? {
        precondition(privateKey.count == 32 && publicKey.count == 32 && Sodium.ready)
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult(&out, privateKey, publicKey) == 0 else { return nil }
        return out
    }

    /// A new private key from `random`, clamped as RFC 7748 §5 describes.
    public static func generatePrivateKey(_ random: any RandomSource) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 32)
        key.withUnsafeMutableBytes { random.fill($0) }
        key[0] &= 248
        key[31] = (key[31] & 127) | 64
        return key
    }
}
