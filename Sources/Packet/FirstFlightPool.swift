import Core
/// A fixed set of `FirstFlightBuffer`s for the flows whose first flight is being read (pending
/// flows, docs/policy.md): all allocated in `init`, taken and given back by index, so the total
/// bytes held for reassembly are bounded (`count × capacity`) and nothing is allocated per flow.
/// When every buffer is taken, `acquire` says so and the caller decides the flow without a host.
///
/// Not thread-safe: owned by the data path.
public final class FirstFlightPool {
    /// The buffers; index them with what `acquire` returned.
    public let buffers: [FirstFlightBuffer]
    private var free: [Int32]
    /// Buffers in use now.
    public var inUse: Int { buffers.count - free.count }

    /// `count` buffers of `capacity` bytes each.
    public init(count: Int, capacity: Int = 16384) {
        precondition(count >= 1 && count <= 1 << 20, "FirstFlightPool count must be 1...2^20")
        buffers = (0..<count).map { _ in FirstFlightBuffer(capacity: capacity) }
        free = (0..<Int32(count)).reversed()
        free.reserveCapacity(count)
    }

    /// A free buffer, reset for a stream starting at `initialSequence`; nil when all are taken.
    public func acquire(initialSequence: UInt32 = 0) -> Int32? {
        guard let i = free.popLast() else { return nil }
        buffers[Int(i)].reset(initialSequence: initialSequence)
        return i
    }

    /// Gives buffer `index` back (once: releasing a free buffer is a programming error).
    public func release(_ index: Int32) {
        precondition(index >= 0 && Int(index) < buffers.count && free.count < buffers.count, "FirstFlightPool.release: bad index")
        free.append(index)
    }

    /// Buffer `index`.
    public subscript(_ index: Int32) -> FirstFlightBuffer { buffers[Int(index)] }
}
