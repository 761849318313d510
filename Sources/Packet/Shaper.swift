/// Rate shaping of one direction for many peers (docs/limits.md "Rate"): per peer a
/// token bucket of bytes and a bounded FIFO of the packets over the rate, released on time.
/// Pure: time is an argument (monotonic ns), nothing here does I/O. One data-path thread owns
/// one `Shaper` (the inbound thread the *up* direction, the outbound thread *down*), so no locks.
///
/// Peers are indexed by their handle's raw value. An unshaped peer costs one array load
/// (`isShaped`). A shaped peer's queue is allocated the first time a packet must wait, from a
/// budget shared by all peers (`totalQueueBytes`); a peer whose queue cannot be had drops what
/// exceeds its bucket (counted as overflow like a full queue).
///
/// Geometry (`Shaper.geometry`): a burst of 5 ms of traffic (at least two 1600-byte packets)
/// and a queue of 100 ms of traffic (at least 16 KiB, at most 8 MiB), bounded by packet bytes.
public final class Shaper {
    /// What `offer` did with a packet.
    public enum Offer: Sendable, Equatable {
        /// Within the rate: send it now (its bytes were taken from the bucket).
        case pass
        /// Held in the peer's queue, released by `release` on time.
        case queued
        /// The queue is full (or none could be had): dropped, to be counted.
        case overflow
    }

    /// One shaped peer.
    @usableFromInline struct Entry {
        @usableFromInline var peer: UInt32
        @usableFromInline var bucket: TokenBucket
        @usableFromInline var queueLimit: Int
        @usableFromInline var queue: PacketFIFO?
        @usableFromInline var active: Bool  // in `activeList`
    }

    /// Budget of queue ring bytes over all peers.
    public let totalQueueBytes: Int
    /// Queue ring bytes allocated now.
    public private(set) var allocatedQueueBytes = 0
    /// Version of the peer set last applied by the owner (free for the caller's use).
    public var version: UInt64 = .max

    /// Raw handle → index in `entries`, -1 when unshaped.
    @usableFromInline var index: [Int32] = []
    @usableFromInline var entries: [Entry] = []
    /// Indexes of entries with packets queued.
    @usableFromInline var activeList: [Int32] = []
    @usableFromInline var cursor = 0

    public init(totalQueueBytes: Int = 256 << 20) {
        self.totalQueueBytes = totalQueueBytes
    }

    /// The burst and queue limit for a rate in bits per second.
    public static func geometry(bitsPerSecond: UInt64) -> (rateBytes: UInt64, burst: UInt64, queueLimit: Int) {
        let rate = max(1, bitsPerSecond / 8)
        let burst = max(rate / 200, 3_200)
        let queue = Int(min(max(rate / 10, 16 << 10), 8 << 20))
        return (rate, min(burst, 1 << 32), queue)
    }

    /// True when `peer` is shaped in this direction: the data path's one check per packet.
    @inlinable @inline(__always) public func isShaped(_ peer: UInt32) -> Bool {
        Int(peer) < index.count && index[Int(peer)] >= 0
    }

    /// Number of shaped peers.
    public var shapedCount: Int { entries.count }
    /// True when some peer has packets waiting.
    @inlinable public var hasQueued: Bool { !activeList.isEmpty }
    /// Packets waiting over all peers.
    public var queuedPackets: Int { activeList.reduce(0) { $0 + (entries[Int($1)].queue?.count ?? 0) } }

    /// Sets the peers and their rates (nil or absent: unshaped); a peer whose rate is unchanged
    /// keeps its bucket and queue, a peer no longer shaped loses its queue. Allocates: call when
    /// the peer set changes, not per packet.
    public func configure(_ rates: [(peer: UInt32, bitsPerSecond: UInt64?)], now: UInt64) {
        var old: [UInt32: Entry] = [:]
        for e in entries { old[e.peer] = e }
        var next: [Entry] = []
        var maxPeer: UInt32 = 0
        for (peer, bps) in rates {
            guard let bps, bps > 0 else { continue }
            let g = Shaper.geometry(bitsPerSecond: bps)
            if var e = old.removeValue(forKey: peer) {
                if e.bucket.ratePerSecond != g.rateBytes || e.bucket.burst != g.burst {
                    e.bucket = TokenBucket(ratePerSecond: g.rateBytes, burst: g.burst, now: now)
                }
                if e.queueLimit != g.queueLimit, let q = e.queue {
                    allocatedQueueBytes -= q.memoryBytes
                    e.queue = nil  // its packets go; a new one is had when needed
                }
                e.queueLimit = g.queueLimit
                e.active = false
                next.append(e)
            } else {
                next.append(Entry(peer: peer, bucket: TokenBucket(ratePerSecond: g.rateBytes, burst: g.burst, now: now),
                                  queueLimit: g.queueLimit, queue: nil, active: false))
            }
            maxPeer = max(maxPeer, peer)
        }
        for (_, e) in old { if let q = e.queue { allocatedQueueBytes -= q.memoryBytes } }
        entries = next
        index = Array(repeating: -1, count: entries.isEmpty ? 0 : Int(maxPeer) + 1)
        activeList.removeAll(keepingCapacity: true)
        activeList.reserveCapacity(entries.count)
        for (i, e) in entries.enumerated() {
            index[Int(e.peer)] = Int32(i)
            if (e.queue?.count ?? 0) > 0 {
                entries[i].active = true
                activeList.append(Int32(i))
            }
        }
        cursor = 0
    }

    /// A packet of shaped `peer` (precondition: `isShaped(peer)`) at `now`: passes when nothing
    /// of the peer waits and its bucket holds the bytes, else is queued, else overflows.
    public func offer(_ peer: UInt32, _ packet: UnsafeRawBufferPointer, now: UInt64) -> Offer {
        let i = Int(index[Int(peer)])
        let waiting = (entries[i].queue?.count ?? 0) > 0
        if !waiting && entries[i].bucket.take(UInt64(packet.count), now: now) { return .pass }
        if entries[i].queue == nil {
            let q = PacketFIFO(limitBytes: entries[i].queueLimit, maxPacket: 2048)
            guard allocatedQueueBytes + q.memoryBytes <= totalQueueBytes else { return .overflow }
            allocatedQueueBytes += q.memoryBytes
            entries[i].queue = q
        }
        guard entries[i].queue!.push(packet) else { return .overflow }
        if !entries[i].active {
            entries[i].active = true
            activeList.append(Int32(i))
        }
        return .queued
    }

    /// Releases the queued packets that are due at `now`, oldest first within a peer, peers in
    /// turn (the starting peer rotates so none starves when `maxPackets` runs out): `body` gets
    /// each packet and its peer (the bytes valid during the call). Returns how many were released.
    @discardableResult
    public func release(now: UInt64, maxPackets: Int, _ body: (UInt32, UnsafeRawBufferPointer) -> Void) -> Int {
        var released = 0
        var k = 0
        let n = activeList.count
        guard n > 0, maxPackets > 0 else { return 0 }
        if cursor >= n { cursor = 0 }
        var visited = 0
        var i = cursor
        while visited < n && released < maxPackets {
            let e = Int(activeList[i])
            let q = entries[e].queue!
            while released < maxPackets, let len = q.headLength, entries[e].bucket.take(UInt64(len), now: now) {
                q.pop { body(entries[e].peer, $0) }
                released += 1
            }
            visited += 1
            i = i + 1 == n ? 0 : i + 1
            k = i
        }
        cursor = k
        // Drop peers whose queue emptied from the active list (order kept).
        var w = 0
        for r in 0..<activeList.count {
            let e = Int(activeList[r])
            if entries[e].queue!.count > 0 {
                activeList[w] = activeList[r]
                w += 1
            } else {
                entries[e].active = false
                if r < cursor { cursor -= 1 }
            }
        }
        activeList.removeLast(activeList.count - w)
        if cursor >= w { cursor = 0 }
        return released
    }

    /// Nanoseconds from `now` until the next queued packet is due (0: now), nil when none waits.
    public func nextDue(now: UInt64) -> UInt64? {
        var best: UInt64? = nil
        for a in activeList {
            let e = entries[Int(a)]
            guard let len = e.queue?.headLength else { continue }
            let w = e.bucket.wait(for: UInt64(len), now: now)
            best = min(best ?? .max, w)
        }
        return best
    }

    /// The poll timeout a data-path thread uses: `idle` when nothing waits, else the time until
    /// the next release rounded up to whole milliseconds (at least 1).
    public func pollTimeout(now: UInt64, idle: Int32) -> Int32 {
        guard !activeList.isEmpty, let ns = nextDue(now: now) else { return idle }
        return Int32(min(UInt64(idle), max(1, (ns + 999_999) / 1_000_000)))
    }

    /// Bytes of state this shaper holds (entries, index, queues), for the memory report.
    public var memoryBytes: Int {
        entries.capacity * MemoryLayout<Entry>.stride + index.capacity * 4 + activeList.capacity * 4
            + allocatedQueueBytes
    }

    /// Bytes one shaped peer costs without a queue.
    public static var entryBytes: Int { MemoryLayout<Entry>.stride + 4 + 4 }
}
