// Injectable randomness: keys, indices, cookie secrets and timer jitter.
import Core
import CSodium

/// Where the core gets random bytes. Production uses `SystemRandom` (libsodium `randombytes_buf`);
/// tests inject a deterministic source so jitter, indices and ephemeral keys are reproducible.
public protocol RandomSource: Sendable {
    /// Fills `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension RandomSource {
    /// A uniformly random 32-bit value.
    public func next32() -> UInt32 {
        var v: UInt32 = 0
        withUnsafeMutableBytes(of: &v) { fill($0) }
        return v
    }

    /// A uniformly random value in `0..<bound` (bound > 0).
    public func uniform(_ bound: UInt32) -> UInt32 {
        precondition(bound > 0)
        if bound == 1 { return 0 }
        let limit = UInt32.max - UInt32.max % bound
        while true {
            let v = next32()
            if v < limit { return v % bound }
        }
    }

    /// `count` random bytes.
    public func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }
}

/// Cryptographically secure randomness from libsodium (`randombytes_buf`).
public struct SystemRandom: RandomSource {
    /// The libsodium source (initialises libsodium if needed).
    public init() { _ = Sodium.ready }

    /// Fills `buffer` from `randombytes_buf`.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}
