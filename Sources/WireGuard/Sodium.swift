// libsodium initialisation and the few helpers every wrapper shares.
import Core
import CSodium

/// One-time libsodium initialisation (`sodium_init`), shared by every wrapper in this module.
enum Sodium {
    /// True once libsodium is initialised; evaluated lazily and thread-safely on first use.
    static let ready: Bool = sodium_init() >= 0

    /// Zeroes `count` bytes at `pointer` in a way the compiler cannot elide (`sodium_memzero`).
    @inline(__always)
    static func zero(_ pointer: UnsafeMutableRawPointer?, _ count: Int) {
        guard let pointer, count > 0 else { return }
        sodium_memzero(pointer, count)
    }

    /// Zeroes a byte array in place (best effort: copies made earlier are not reached).
    static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { zero($0.baseAddress, $0.count) }
    }

    /// Constant-time comparison of two equally long byte ranges (`sodium_memcmp`).
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
        sodium_memcmp(a, b, count) == 0
    }
}
