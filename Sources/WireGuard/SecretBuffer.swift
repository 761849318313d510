// Heap memory for secrets, zeroed with sodium_memzero when cleared or released.
import Core
import CSodium

/// A fixed-size block of secret bytes (keys, chaining keys, ephemeral private keys).
///
/// The memory is zeroed with `sodium_memzero` by `clear()` and again when the last reference goes
/// away, so key material does not outlive its owner. Contents are written only by the thread that
/// owns the buffer (under its owner's lock) or before the buffer is shared.
final class SecretBuffer: @unchecked Sendable {
    // Safe to share: every writer holds the owning peer's mutex or writes before publication
    // (a Keypair's keys are written in its initialiser and only read afterwards).
    let base: UnsafeMutableRawPointer
    let count: Int

    init(count: Int) {
        self.count = count
        base = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        base.initializeMemory(as: UInt8.self, repeating: 0, count: count)
    }

    /// A buffer holding a copy of `bytes`.
    convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count)
        write(bytes, at: 0)
    }

    deinit {
        Sodium.zero(base, count)
        base.deallocate()
    }

    /// Zeroes the whole buffer.
    func clear() { Sodium.zero(base, count) }

    /// Copies `bytes` to `offset`.
    func write(_ bytes: [UInt8], at offset: Int) {
        precondition(offset + bytes.count <= count)
        bytes.withUnsafeBytes { (base + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    }

    /// A copy of `length` bytes from `offset` (for handshake arithmetic, which may allocate).
    func read(_ offset: Int, _ length: Int) -> [UInt8] {
        precondition(offset + length <= count)
        return Array(UnsafeRawBufferPointer(start: base + offset, count: length))
    }

    /// True when every byte is zero (constant time).
    var isZero: Bool { sodium_is_zero(base.assumingMemoryBound(to: UInt8.self), count) == 1 }
}
