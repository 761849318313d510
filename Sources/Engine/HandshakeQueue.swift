import Core
import Runtime
import SystemIO
import WireGuard

/// Handshake messages on their way from the inbound thread to the handshake thread: a bounded
/// FIFO of preallocated 148-byte slots (the largest handshake message) with their sources.
/// Nothing is allocated after `init`; a full queue refuses the message (the caller drops and counts
/// it, `GatewayDrop.handshakeBacklogFull`), as wireguard-go drops when its handshake queue is full.
///
/// One producer (the inbound thread) and one consumer (the handshake thread).
final class HandshakeQueue: @unchecked Sendable {
    // Safe: `storage`, `lengths`, `sources` and the indices are touched only with `lock` held; the
    // pointers themselves are immutable and freed in deinit, after both threads are joined.
    /// Most messages waiting at once.
    let capacity: Int
    /// Bytes per slot: the largest handshake message.
    static let slotBytes = MessageLayout.Initiation.size
    private let lock = ConditionLock()
    private let storage: UnsafeMutableRawPointer
    private let lengths: UnsafeMutablePointer<Int>
    private let sources: UnsafeMutablePointer<Endpoint>
    private var head = 0
    private var count = 0
    private var closed = false
    private var consumerWaiting = false

    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        storage = .allocate(byteCount: capacity * HandshakeQueue.slotBytes, alignment: 16)
        lengths = .allocate(capacity: capacity)
        lengths.initialize(repeating: 0, count: capacity)
        sources = .allocate(capacity: capacity)
        sources.initialize(repeating: Endpoint(address: IPAddress(v4: 0), port: 0), count: capacity)
    }

    deinit {
        storage.deallocate()
        lengths.deallocate()
        sources.deinitialize(count: capacity)
        sources.deallocate()
    }

    /// Messages waiting now.
    var depth: Int { lock.withLock { count } }

    /// Copies `datagram` (at most ``slotBytes``) in; false when the queue is full or closed.
    func push(_ datagram: UnsafeRawBufferPointer, from source: Endpoint) -> Bool {
        guard datagram.count <= HandshakeQueue.slotBytes, let bytes = datagram.baseAddress else { return false }
        return lock.withLock {
            guard !closed, count < capacity else { return false }
            let slot = (head + count) % capacity
            (storage + slot * HandshakeQueue.slotBytes).copyMemory(from: bytes, byteCount: datagram.count)
            lengths[slot] = datagram.count
            sources[slot] = source
            count += 1
            if consumerWaiting { lock.signal() }
            return true
        }
    }

    /// Moves up to `batch.capacity` messages into `batch` (slots from 0, at its headroom), waiting
    /// up to `timeoutMilliseconds` for the first; returns how many (0: timed out or closed).
    func pop(into batch: PacketBatch, timeoutMilliseconds: Int) -> Int {
        lock.withLock {
            if count == 0 && !closed {
                let deadline = SystemClock().monotonicNanoseconds() &+ UInt64(timeoutMilliseconds) &* 1_000_000
                consumerWaiting = true
                while count == 0 && !closed && lock.wait(untilMonotonic: deadline) {}
                consumerWaiting = false
            }
            let n = min(count, batch.capacity)
            for i in 0..<n {
                let slot = (head + i) % capacity
                let room = batch.readRoom(i)
                room.baseAddress!.copyMemory(from: storage + slot * HandshakeQueue.slotBytes, byteCount: lengths[slot])
                batch.offsets[i] = batch.headroom
                batch.lengths[i] = lengths[slot]
                batch.endpoints[i] = sources[slot]
            }
            head = (head + n) % capacity
            count -= n
            batch.count = n
            return n
        }
    }

    /// Refuses further messages and wakes the consumer.
    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }
}
