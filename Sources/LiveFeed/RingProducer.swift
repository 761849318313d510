import Core
import CShims
import Runtime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The writing end of the live ring (`RuntimeDirectory/live.ring`, docs/ring.md, docs/capture.md): one per daemon.
///
/// Write order, so a consumer never reads a torn record: the slot bytes are written, then `head`
/// is advanced with a release store; the consumer acquire-loads `head` before reading the slot.
/// A slot is reused only after the consumer has release-stored a `tail` past it, so a full ring
/// drops the new record and counts it in `dropped` — it never blocks and never overwrites an
/// unread slot. Publishing allocates nothing.
///
/// Wake-up: records become visible immediately, but a sleeping consumer is woken only by
/// `endBatch()` (or `publish(batch:)`), and only when it has set its `waiting` word — one futex
/// wake per batch at most, nothing at all when nobody watches.
///
/// `@unchecked Sendable`: an instance must be used by one thread at a time (the single-producer
/// contract); it is marked so it can be handed to the data-path thread that owns it.
public final class RingProducer: @unchecked Sendable {
    /// Where the ring lives.
    public let path: String
    /// This file's generation: the previous file's plus one, or the creation time in nanoseconds
    /// when there was no valid previous file.
    public let generation: UInt64
    /// Number of slots (a power of two).
    public let slotCount: Int

    private(set) var file: RingFile?
    private let slots: UnsafeMutableRawPointer
    private let headWord: UnsafeMutableRawPointer
    private let tailWord: UnsafeMutableRawPointer
    private let droppedWord: UnsafeMutableRawPointer
    private let futexWord: UnsafeMutableRawPointer
    private let waitingWord: UnsafeMutableRawPointer
    private let mask: UInt64
    private var head: UInt64 = 0
    private var cachedTail: UInt64 = 0
    private var unsignalled = false
    private var droppedCount: UInt64 = 0

    /// Default file name inside the runtime directory.
    public static let defaultFileName = "live.ring"

    /// Creates (or recreates) the ring `directory/fileName` with `slotCount` slots.
    ///
    /// A new file is always made (temporary file + rename). If a valid ring was there, the new
    /// generation is its generation plus one and the old file is marked closed and its consumer
    /// woken, so a `RingConsumer` re-attaches at once. `mode` is the file's permission bits: a
    /// consumer writes `tail` and `waiting`, so it needs write access (group `0o660` by default).
    public init(directory: String, fileName: String = RingProducer.defaultFileName,
                slotCount: Int, mode: UInt32 = 0o660) throws(RingError) {
        guard slotCount >= RingLayout.minimumSlotCount, slotCount <= RingLayout.maximumSlotCount,
              slotCount & (slotCount - 1) == 0 else {
            throw .badGeometry(path: "\(directory)/\(fileName)",
                               reason: "slot count \(slotCount) is not a power of two in \(RingLayout.minimumSlotCount)...\(RingLayout.maximumSlotCount)")
        }
        let path = directory.hasSuffix("/") ? directory + fileName : "\(directory)/\(fileName)"
        let previous = try? RingFile.attach(path: path)
        let generation = previous.map { $0.generation &+ 1 } ?? UInt64(clamping: SystemClock().wallNanoseconds())
        let file = try RingFile.create(path: path, slotCount: slotCount, generation: generation, mode: mode_t(mode))
        previous?.markClosedAndWake()
        self.path = path
        self.generation = generation
        self.slotCount = slotCount
        self.file = file
        slots = file.slots
        headWord = file.pointer(RingLayout.headOffset)
        tailWord = file.pointer(RingLayout.tailOffset)
        droppedWord = file.pointer(RingLayout.droppedOffset)
        futexWord = file.pointer(RingLayout.futexOffset)
        waitingWord = file.pointer(RingLayout.waitingOffset)
        mask = UInt64(slotCount - 1)
    }

    deinit { close() }

    /// Records published so far (the ring's `head`).
    public var published: UInt64 { head }

    /// Whether a consumer is attached (its pid is in the header).
    public var hasConsumer: Bool {
        guard let file else { return false }
        return tv_load_acquire_u32(file.pointer(RingLayout.consumerPIDOffset)) != 0
    }

    /// Slots free right now (reads the consumer's `tail`). A producer that must not drop — only
    /// benchmarks — can wait for room with it; the daemon never does.
    public var freeSlots: Int {
        guard file != nil else { return 0 }
        cachedTail = tv_load_acquire_u64(tailWord)
        return slotCount - Int(head &- cachedTail)
    }

    /// Records dropped because the ring was full.
    public var dropped: UInt64 { droppedCount }

    /// Only the producer writes `dropped`, so a plain (relaxed) store of a local count does; no
    /// locked read-modify-write on the path taken for every packet when nobody reads the ring.
    @inline(__always)
    private func countDrops(_ n: Int) {
        droppedCount &+= UInt64(n)
        tv_store_relaxed_u64(droppedWord, droppedCount)
    }

    /// Whether the slot for the next record is free; refreshes the cached `tail` when it looks full.
    @inline(__always)
    private func hasRoom() -> Bool {
        if head &- cachedTail < UInt64(slotCount) { return true }
        cachedTail = tv_load_acquire_u64(tailWord)
        return head &- cachedTail < UInt64(slotCount)
    }

    /// Publishes one record; false (and `dropped` + 1) when the ring is full or closed.
    /// The record is visible at once; call `endBatch()` after a burst to wake a waiting consumer.
    @discardableResult
    public func publish(_ record: LiveRecord) -> Bool {
        guard file != nil, hasRoom() else {
            if file != nil { countDrops(1) }
            return false
        }
        record.encode(into: slots + Int((head & mask) &* UInt64(RingLayout.slotSize)))
        head &+= 1
        tv_store_release_u64(headWord, head)
        unsignalled = true
        return true
    }

    /// Publishes records in order with a single `head` store, then `endBatch()`. Returns how many
    /// were published; the rest were dropped (and counted) because the ring was full.
    @discardableResult
    public func publish(batch records: UnsafeBufferPointer<LiveRecord>) -> Int {
        guard file != nil else { return 0 }
        var written = 0
        for record in records {
            guard hasRoom() else { break }
            record.encode(into: slots + Int((head & mask) &* UInt64(RingLayout.slotSize)))
            head &+= 1
            written += 1
        }
        if written < records.count { countDrops(records.count - written) }
        if written > 0 {
            tv_store_release_u64(headWord, head)
            unsignalled = true
        }
        endBatch()
        return written
    }

    /// Ends a burst of `publish` calls: wakes the consumer if it said it is waiting and something
    /// was published since the last call. Costs one fence and one load otherwise.
    public func endBatch() {
        guard unsignalled else { return }
        unsignalled = false
        // Pairs with the consumer's "store waiting, fence, load head": one of the two sides
        // sees the other's store, so a wake-up is never lost.
        tv_fence_seq_cst()
        if tv_load_seq_cst_u32(waitingWord) != 0, tv_exchange_seq_cst_u32(waitingWord, 0) != 0 {
            _ = tv_fetch_add_release_u32(futexWord, 1)
            _ = tv_futex_wake(futexWord, 1)
        }
    }

    /// Marks the ring closed (a consumer keeps reading what is left, then waits for a new file)
    /// and unmaps it. Further publishes return false. Idempotent.
    public func close() {
        guard let file else { return }
        file.markClosedAndWake()
        self.file = nil
    }
}
