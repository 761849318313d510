import Core
/// Reassembles the first bytes of a byte stream — a TCP flow's first flight (the ClientHello,
/// an HTTP request head, a DNS-over-TCP message) or a QUIC CRYPTO stream — from pieces that
/// may arrive split, overlapping, duplicated or out of order. Bounded: bytes beyond `capacity`
/// (16 KiB by default, RFC 8446 §5.1's record limit) are dropped and counted; nothing is
/// buffered for bytes before the stream's start.
///
/// Storage (the bytes and a bitmap of which are filled) is allocated once in `init`; `reset`,
/// `insert` and `contiguous` allocate nothing, so a pool of these serves pending flows.
/// `contiguous` is what the extractors read: the bytes from the start up to the first hole.
///
/// Not thread-safe: owned by one data-path thread.
public final class FirstFlightBuffer {
    /// The most stream bytes kept (from stream offset 0).
    public let capacity: Int
    /// Stream bytes from offset 0 without a hole.
    public private(set) var contiguousCount = 0
    /// Bytes offered beyond `capacity` since `reset` (duplicates counted again).
    public private(set) var droppedBytes = 0
    /// The TCP sequence number of stream offset 0 (see `reset(initialSequence:)`).
    public private(set) var initialSequence: UInt32 = 0

    private let bytes: UnsafeMutableRawBufferPointer
    private let filled: UnsafeMutablePointer<UInt64>
    private let words: Int

    /// A buffer for the first `capacity` bytes of a stream.
    public init(capacity: Int = 16384) {
        precondition(capacity >= 1 && capacity <= 1 << 24, "FirstFlightBuffer capacity must be 1...16 MiB")
        self.capacity = capacity
        bytes = .allocate(byteCount: capacity, alignment: 16)
        words = (capacity + 63) / 64
        filled = .allocate(capacity: words)
        filled.initialize(repeating: 0, count: words)
    }

    deinit {
        bytes.deallocate()
        filled.deallocate()
    }

    /// Forgets everything; the stream's offset 0 is TCP sequence number `initialSequence` (the
    /// SYN's sequence number + 1; for a flow seen without its SYN, the first data segment's).
    public func reset(initialSequence: UInt32 = 0) {
        self.initialSequence = initialSequence
        contiguousCount = 0
        droppedBytes = 0
        filled.update(repeating: 0, count: words)
    }

    /// Adds a TCP segment's payload: `sequence` is the segment's sequence number. Data before
    /// the stream start (a retransmitted SYN's, or 2 GiB away: wrapped) is ignored.
    @discardableResult
    public func insert(sequence: UInt32, _ payload: UnsafeRawBufferPointer) -> Int {
        let delta = Int(Int32(bitPattern: sequence &- initialSequence))
        if delta < 0 {
            // Keep the part at or after the stream start.
            guard payload.count > -delta else { return contiguousCount }
            return insert(offset: 0, UnsafeRawBufferPointer(rebasing: payload[(-delta)...]))
        }
        return insert(offset: delta, payload)
    }

    /// Adds `payload` at stream offset `offset` (a QUIC CRYPTO frame's). Returns the new
    /// `contiguousCount`. Where pieces overlap the first copy is kept.
    @discardableResult
    public func insert(offset: Int, _ payload: UnsafeRawBufferPointer) -> Int {
        guard offset >= 0, !payload.isEmpty else { return contiguousCount }
        guard offset < capacity else {
            droppedBytes += payload.count
            return contiguousCount
        }
        let end = min(capacity, offset + payload.count)
        droppedBytes += offset + payload.count - end
        var k = offset
        while k < end {
            let w = k >> 6
            let bit = UInt64(1) << UInt64(k & 63)
            if filled[w] == ~0 {
                k = (w + 1) << 6
                continue
            }
            if k & 63 == 0 && filled[w] == 0 && k + 64 <= end {  // a whole empty word: one copy
                (bytes.baseAddress! + k).copyMemory(from: payload.baseAddress! + (k - offset), byteCount: 64)
                filled[w] = ~0
                k += 64
                continue
            }
            if filled[w] & bit == 0 {
                bytes[k] = payload[k - offset]
                filled[w] |= bit
            }
            k += 1
        }
        // Advance the contiguous prefix.
        var c = contiguousCount
        while c < capacity {
            let w = c >> 6
            let rest = filled[w] >> UInt64(c & 63)
            if rest == ~UInt64(0) >> UInt64(c & 63) {
                c = (w + 1) << 6
                continue
            }
            c += (~rest).trailingZeroBitCount
            break
        }
        contiguousCount = min(c, capacity)
        return contiguousCount
    }

    /// True when offset 0 ..< `capacity` are all in: more data cannot change an extractor's answer.
    public var isFull: Bool { contiguousCount == capacity }

    /// The bytes from stream offset 0 up to the first hole (valid until the next `insert`/`reset`).
    public var contiguous: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[0..<contiguousCount])
    }
}
