// Heap memory for secrets, zeroed with sodium_memzero when cleared or released.
import Core
import CSodium

/// A fixed-size block of secret bytes (keys, chaining keys, ephemeral private keys).
///
/// The memory is zeroed with `sodium_memzero` by `clear()` and again when the last reference goes
/// away, so key material does not outlive its owner. Contents are written only by the thread that
/// owns the buffer (under its owner's lock) or before the buffer is shared.
///
/// The bytes are tail-allocated in the object (`ManagedBuffer`; the header is the byte count): one
/// allocation per buffer, not two — a peer holds several (pre-shared key, static-static DH,
/// handshake secrets), and a gateway with 10,000 peers configured holds tens of thousands.
struct SecretBuffer: @unchecked Sendable {
    // Safe to share: every writer holds the owning peer's mutex or writes before publication
    // (a Keypair's keys are written in its initialiser and only read afterwards). A copy of the
    // struct is the same buffer (a reference to its storage).
    private let storage: SecretStorage

    /// A zeroed buffer of `count` bytes.
    static func zeroed(count: Int) -> SecretBuffer {
        let s = unsafeDowncast(SecretStorage.create(minimumCapacity: max(count, 1)) { _ in count }, to: SecretStorage.self)
        let b = SecretBuffer(storage: s)
        b.base.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        return b
    }

    /// A buffer holding a copy of `bytes`.
    static func copy(of bytes: [UInt8]) -> SecretBuffer {
        let b = zeroed(count: bytes.count)
        b.write(bytes, at: 0)
        return b
    }

    private init(storage: SecretStorage) { self.storage = storage }

    /// The first byte (stable: the bytes live in the storage object, which does not move).
    @inline(__always) var base: UnsafeMutableRawPointer { storage.base }

    /// The number of bytes.
    @inline(__always) var count: Int { storage.header }

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

/// The bytes of a ``SecretBuffer``, tail-allocated behind the byte count, zeroed when the last
/// reference goes away.
final class SecretStorage: ManagedBuffer<Int, UInt8> {
    @inline(__always) var base: UnsafeMutableRawPointer {
        withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
    }

    deinit { Sodium.zero(base, header) }
}
