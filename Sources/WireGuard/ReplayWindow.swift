// Sliding-window replay protection for transport counters (RFC 6479).
import Core

/// The receive-side replay filter of one keypair: a ring of 128 64-bit blocks (8192 bits) of which
/// 8128 bits are the usable window, the same size the Linux kernel and wireguard-go use
/// (RFC 6479 §2 with WireGuard's parameters). Moving forward clears whole blocks; nothing is shifted.
struct ReplayWindow: ~Copyable {
    /// Bits per block.
    static let blockBits: UInt64 = 64
    /// Blocks in the ring (a power of two).
    static let ringBlocks: UInt64 = 128
    /// Counters more than this far behind the newest accepted one are rejected.
    static let windowSize: UInt64 = (ringBlocks - 1) * blockBits

    private let ring: UnsafeMutablePointer<UInt64>
    /// The newest accepted counter.
    private(set) var last: UInt64 = 0

    init() {
        ring = .allocate(capacity: Int(Self.ringBlocks))
        ring.initialize(repeating: 0, count: Int(Self.ringBlocks))
    }

    deinit { ring.deallocate() }

    /// Accepts `counter` once: true the first time a counter below `limit` inside the window is seen,
    /// false for duplicates, counters too far behind, and counters ≥ `limit`. Rejected counters
    /// change nothing. Call it only after the packet's tag verified (as the kernel does).
    mutating func accept(_ counter: UInt64, limit: UInt64) -> Bool {
        guard counter < limit else { return false }
        let mask = Self.ringBlocks - 1
        let block = counter / Self.blockBits
        let bit = UInt64(1) << (counter % Self.blockBits)
        if counter > last {
            let current = last / Self.blockBits
            let diff = min(block - current, Self.ringBlocks)
            var i: UInt64 = 1
            while i <= diff {
                ring[Int((current &+ i) & mask)] = 0
                i += 1
            }
            last = counter
        } else if last - counter > Self.windowSize {
            return false
        }
        let slot = Int(block & mask)
        let old = ring[slot]
        ring[slot] = old | bit
        return old & bit == 0
    }

    /// Whether `counter` would be accepted, without changing anything.
    func wouldAccept(_ counter: UInt64, limit: UInt64) -> Bool {
        guard counter < limit else { return false }
        if counter > last { return true }
        if last - counter > Self.windowSize { return false }
        let slot = Int((counter / Self.blockBits) & (Self.ringBlocks - 1))
        return ring[slot] & (UInt64(1) << (counter % Self.blockBits)) == 0
    }
}
