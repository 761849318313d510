// BLAKE2s hash, keyed MAC, HMAC-BLAKE2s and WireGuard's HKDF, through libb2.
import Core
import CBlake2

/// BLAKE2s (RFC 7693) as WireGuard uses it (whitepaper §5.4): `HASH` is BLAKE2s-256, `MAC` is keyed
/// BLAKE2s-128, `HMAC` is RFC 2104 HMAC over BLAKE2s-256 and `KDF_n` is HKDF (RFC 5869) over that HMAC.
public enum Blake2s {
    /// BLAKE2s block size in bytes (the HMAC pad length).
    public static let blockSize = 64
    /// Full BLAKE2s-256 output length.
    public static let hashSize = 32

    /// BLAKE2s of the concatenation of `parts`, `outputLength` bytes, optionally keyed (RFC 7693 §2.5).
    public static func hash(_ parts: [UInt8]..., key: [UInt8] = [], outputLength: Int = 32) -> [UInt8] {
        hash(parts: parts, key: key, outputLength: outputLength)
    }

    /// BLAKE2s of the concatenation of `parts`.
    public static func hash(parts: [[UInt8]], key: [UInt8] = [], outputLength: Int = 32) -> [UInt8] {
        precondition(outputLength >= 1 && outputLength <= 32 && key.count <= 32)
        var state = blake2s_state()
        if key.isEmpty {
            _ = blake2s_init(&state, outputLength)
        } else {
            _ = key.withUnsafeBytes { blake2s_init_key(&state, outputLength, $0.baseAddress, key.count) }
        }
        for part in parts where !part.isEmpty {
            _ = part.withUnsafeBufferPointer { blake2s_update(&state, $0.baseAddress, $0.count) }
        }
        var out = [UInt8](repeating: 0, count: outputLength)
        _ = out.withUnsafeMutableBufferPointer { blake2s_final(&state, $0.baseAddress, outputLength) }
        withUnsafeMutableBytes(of: &state) { Sodium.zero($0.baseAddress, $0.count) }
        return out
    }

    /// WireGuard's `MAC(key, input)`: keyed BLAKE2s with a 16-byte output, over raw bytes.
    public static func mac16(key: UnsafeRawBufferPointer, _ input: UnsafeRawBufferPointer,
                             into out: UnsafeMutableRawPointer) {
        precondition(key.count >= 1 && key.count <= 32)
        _ = blake2s(out.assumingMemoryBound(to: UInt8.self), input.baseAddress, key.baseAddress, 16,
                    input.count, key.count)
    }

    /// WireGuard's `MAC(key, input)` returning the 16 bytes.
    public static func mac16(key: [UInt8], _ input: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        key.withUnsafeBytes { k in
            input.withUnsafeBytes { i in out.withUnsafeMutableBytes { mac16(key: k, i, into: $0.baseAddress!) } }
        }
        return out
    }

    /// `HMAC(key, input)`: RFC 2104 HMAC with BLAKE2s-256 and a 64-byte block.
    public static func hmac(key: [UInt8], _ input: [UInt8]) -> [UInt8] {
        var padded = key.count > blockSize ? hash(key) : key
        padded += [UInt8](repeating: 0, count: blockSize - padded.count)
        var inner = padded.map { $0 ^ 0x36 }
        var outer = padded.map { $0 ^ 0x5c }
        var innerHash = hash(inner, input)
        let result = hash(outer, innerHash)
        Sodium.zero(&padded)
        Sodium.zero(&inner)
        Sodium.zero(&outer)
        Sodium.zero(&innerHash)
        return result
    }

    /// `KDF_n(key, input)`: HKDF extract with `key` as salt, then `n` (1...3) expanded 32-byte outputs
    /// τ1 = HMAC(τ0, 0x1), τi = HMAC(τ0, τ(i-1) ‖ i) (whitepaper §5.4).
    public static func kdf(_ n: Int, key: [UInt8], input: [UInt8]) -> [[UInt8]] {
        precondition(n >= 1 && n <= 3)
        var prk = hmac(key: key, input)
        var outputs: [[UInt8]] = []
        var previous: [UInt8] = []
        for i in 1...n {
            previous = hmac(key: prk, previous + [UInt8(i)])
            outputs.append(previous)
        }
        Sodium.zero(&prk)
        return outputs
    }
}
