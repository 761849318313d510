import Core
import CShims
import Runtime
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reading end of the live ring: one per watcher (`tunnelctl watch`).
///
/// `read` acquire-loads `head`, copies the slots up to it out of the mapping and release-stores
/// `tail`, which hands those slots back to the producer. `wait` sleeps on the header's futex word
/// with the waiting-flag protocol (announce, re-check `head`, sleep), so a wake-up is never lost.
///
/// The consumer follows the producer across restarts: when the file at `path` is replaced (a new
/// inode, a new generation) or the producer closes it, the consumer first drains what is left,
/// then re-attaches to the new file by itself (`wait` reports `.reattached`). While no file is
/// there it polls for one. An exclusive `flock` on the file keeps a second consumer out.
///
/// `@unchecked Sendable`: an instance must be used by one thread at a time (single consumer).
public final class RingConsumer: @unchecked Sendable {
    /// The ring's path.
    public let path: String
    /// Where a fresh attach starts reading.
    public enum Start: Sendable {
        /// Every record still in the ring (the backlog first).
        case oldest
        /// Only records published after the attach.
        case latest
    }

    /// The consumer's view of the producer.
    public enum Status: Sendable, Equatable {
        /// Mapped and the producer is running.
        case attached
        /// Mapped, but the producer closed the ring (daemon stopped); waiting for a new file.
        case producerClosed
        /// No file at `path` right now; waiting for one.
        case fileMissing
        /// The file at `path` was rejected (the error says why); waiting for a valid one.
        case rejected(RingError)
    }

    /// What `wait` returned for.
    public enum WaitResult: Sendable, Equatable {
        /// Records are available to `read`.
        case ready
        /// The timeout passed with nothing to read.
        case timedOut
        /// A new ring file (this generation) replaced the old one; reading continues from its start.
        case reattached(generation: UInt64)
    }

    private var file: RingFile?
    private var tail: UInt64 = 0
    private var lastCheck: UInt64 = 0

    /// The current status (updated by `wait` and `read`).
    public private(set) var status: Status = .attached

    /// Attaches to an existing ring. Throws `RingError` when the file is missing, bad or in use.
    public init(path: String, start: Start = .oldest) throws(RingError) {
        self.path = path
        let file = try RingConsumer.lockedAttach(path: path)
        self.file = file
        let tailNow = tv_load_acquire_u64(file.pointer(RingLayout.tailOffset))
        let headNow = tv_load_acquire_u64(file.pointer(RingLayout.headOffset))
        tail = start == .latest ? headNow : tailNow
        if headNow &- tail > UInt64(file.slotCount) { tail = headNow }  // stale or corrupt tail
        tv_store_release_u64(file.pointer(RingLayout.tailOffset), tail)
        status = file.isClosed ? .producerClosed : .attached
    }

    deinit { detach() }

    /// Clears this consumer's pid from the header; the file lock goes with the descriptor.
    private func detach() {
        if let file { tv_store_release_u32(file.pointer(RingLayout.consumerPIDOffset), 0) }
        file = nil
    }

    /// A consumer reading through the producer's own mapping (same process, tests only).
    ///
    /// ThreadSanitizer tracks memory by virtual address: with two separate mappings of the file it
    /// sees two unrelated buffers and can find nothing. Sharing one mapping lets it check the
    /// ring's synchronisation between a producer thread and a consumer thread.
    init(sharingMappingOf producer: RingProducer) {
        path = producer.path
        file = producer.file
        if let file { tv_store_release_u32(file.pointer(RingLayout.consumerPIDOffset), UInt32(bitPattern: getpid())) }
    }

    private static func lockedAttach(path: String) throws(RingError) -> RingFile {
        let file = try RingFile.attach(path: path)
        let locked: Bool
        do { locked = try Sys.tryLock(file.fd, LOCK_EX, path) } catch { throw .system(error) }
        guard locked else { throw .busy(path: path) }
        tv_store_release_u32(file.pointer(RingLayout.consumerPIDOffset), UInt32(bitPattern: getpid()))
        return file
    }

    /// The generation of the attached file (0 when none is attached).
    public var generation: UInt64 { file?.generation ?? 0 }

    /// Records the producer dropped because the ring was full (this file only).
    public var dropped: UInt64 { file.map { tv_load_relaxed_u64($0.pointer(RingLayout.droppedOffset)) } ?? 0 }

    /// The producer's process id, from the header (0 when none is attached).
    public var producerPID: Int32 { file.map { Int32(bitPattern: $0.u32(RingLayout.producerPIDOffset)) } ?? 0 }

    /// Whether the attached file's producer has closed it (daemon stopped or file replaced);
    /// read straight from the header, unlike `status`, which `wait` updates.
    public var isProducerClosed: Bool { file?.isClosed ?? true }

    /// Slots in the attached ring.
    public var slotCount: Int { file?.slotCount ?? 0 }

    /// Records waiting to be read.
    public var available: Int {
        guard let file else { return 0 }
        return Int(min(tv_load_acquire_u64(file.pointer(RingLayout.headOffset)) &- tail, UInt64(file.slotCount)))
    }

    /// Copies up to `buffer.count` available records into `buffer`, oldest first, and frees their
    /// slots. Returns how many were copied. Never blocks, allocates nothing.
    public func read(into buffer: UnsafeMutableBufferPointer<LiveRecord>) -> Int {
        guard let file, let base = buffer.baseAddress else { return 0 }
        let head = tv_load_acquire_u64(file.pointer(RingLayout.headOffset))
        var pending = head &- tail
        let slotCount = UInt64(file.slotCount)
        if pending > slotCount {
            // Only a misbehaving writer gets here; resynchronise instead of reading garbage.
            tail = head
            tv_store_release_u64(file.pointer(RingLayout.tailOffset), tail)
            pending = 0
        }
        let n = Int(min(pending, UInt64(buffer.count)))
        let mask = slotCount - 1
        let slots = UnsafeRawPointer(file.slots)
        for i in 0..<n {
            (base + i).initialize(to: LiveRecord(slot: slots + Int(((tail &+ UInt64(i)) & mask) &* UInt64(RingLayout.slotSize))))
        }
        if n > 0 {
            tail &+= UInt64(n)
            tv_store_release_u64(file.pointer(RingLayout.tailOffset), tail)
        }
        return n
    }

    /// Reads up to `max` available records into a new array (convenience for tools and tests).
    public func read(max: Int = Int.max) -> [LiveRecord] {
        let count = min(max, available)
        guard count > 0 else { return [] }
        return [LiveRecord](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = read(into: buffer)
        }
    }

    /// Sleeps until records are available, the file is replaced, or `timeoutNanoseconds` pass.
    /// A closed or missing file is checked for a replacement at least every `pollNanoseconds`.
    /// Before sleeping it spins for up to `spin` polls of `head` (about 30 ns each): a consumer
    /// that keeps up with a busy producer then never makes the producer pay for a futex wake.
    public func wait(timeoutNanoseconds: UInt64, pollNanoseconds: UInt64 = 100_000_000, spin: Int = 256) -> WaitResult {
        if let file, spin > 0 {
            let headWord = file.pointer(RingLayout.headOffset)
            for _ in 0..<spin {
                if tv_load_acquire_u64(headWord) != tail { return .ready }
                tv_cpu_relax()
            }
        }
        let deadline = SystemClock().monotonicNanoseconds() &+ timeoutNanoseconds
        while true {
            if available > 0 { return .ready }
            let now = SystemClock().monotonicNanoseconds()
            if file == nil || file!.isClosed || now &- lastCheck >= pollNanoseconds {
                lastCheck = now
                if let result = checkReplacement() { return result }
                if available > 0 { return .ready }
            }
            guard now < deadline else { return .timedOut }
            let slice = min(deadline - now, pollNanoseconds)
            guard let file, !file.isClosed else {
                Sys.sleep(nanoseconds: slice)
                continue
            }
            let futex = file.pointer(RingLayout.futexOffset)
            let waiting = file.pointer(RingLayout.waitingOffset)
            let seen = tv_load_acquire_u32(futex)
            tv_store_seq_cst_u32(waiting, 1)
            tv_fence_seq_cst()
            if tv_load_acquire_u64(file.pointer(RingLayout.headOffset)) != tail {
                tv_store_seq_cst_u32(waiting, 0)
                return .ready
            }
            _ = tv_futex_wait(futex, seen, Int64(slice))
            tv_store_seq_cst_u32(waiting, 0)
        }
    }

    /// Compares the attached file with what is at `path` now and re-attaches when it changed.
    /// Keeps the old mapping until it is drained. Returns `.reattached` when it switched files.
    public func checkReplacement() -> WaitResult? {
        if file != nil, available > 0 { return nil }  // drain the old file first
        let identity = RingFile.identity(path)
        if let file, let identity, identity.device == file.device, identity.inode == file.inode {
            status = file.isClosed ? .producerClosed : .attached
            return nil
        }
        guard identity != nil else {
            detach()
            status = .fileMissing
            return nil
        }
        detach()
        do {
            let fresh = try RingConsumer.lockedAttach(path: path)
            file = fresh
            tail = tv_load_acquire_u64(fresh.pointer(RingLayout.tailOffset))
            status = fresh.isClosed ? .producerClosed : .attached
            return .reattached(generation: fresh.generation)
        } catch {
            status = error == .notFound(path: path) ? .fileMissing : .rejected(error)
            return nil
        }
    }
}
