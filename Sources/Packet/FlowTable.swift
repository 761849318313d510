import Core
/// A bounded connection-tracking table: O(1) lookup and insert, least-recently-used eviction
/// when full, idle timeouts per protocol and TCP state (`FlowTimeouts`), per-flow counters each
/// way, and a cached verdict slot per flow. Pure: time comes in as `now` (monotonic
/// milliseconds); nothing here does I/O.
///
/// All storage is allocated once in `init`: a flat, cache-line aligned array of `capacity`
/// 128-byte slots (16 bytes of links + the 112-byte `FlowEntry`, so a lookup touches the key's
/// line and an update the counters' line), a bucket array (a power of two ≥ 2 × capacity) of
/// index-chained hash lists, and an intrusive doubly linked LRU list through the slots. No
/// operation allocates.
///
/// Expiry is lazy — an entry found expired by `track`/`lookup` is ended then — plus an
/// incremental `expire(now:budget:_:)` sweep that the caller runs on a timer, so every idle
/// entry is found within `capacity / budget` sweeps.
///
/// Not thread-safe: one data-path thread owns it.
public final class FlowTable {
    /// One slot: links (hash tag, next in its bucket chain or in the free list, LRU neighbours)
    /// and the entry. A slot is in use when `entry.id != 0`.
    @usableFromInline struct Slot {
        @usableFromInline var tag: UInt32
        @usableFromInline var chainNext: Int32
        @usableFromInline var lruPrev: Int32
        @usableFromInline var lruNext: Int32
        @usableFromInline var entry: FlowEntry
    }

    /// The most flows the table holds.
    public let capacity: Int
    /// The seed of the bucket hash (`FlowKey.hash64(seed:)`).
    public let hashSeed: UInt64
    /// The idle timeouts in force.
    public var timeouts: FlowTimeouts
    /// Flows in the table now.
    public private(set) var count = 0
    /// Counters since creation.
    public private(set) var stats = FlowTableStats()

    @usableFromInline let slots: UnsafeMutablePointer<Slot>
    @usableFromInline let buckets: UnsafeMutablePointer<Int32>
    @usableFromInline let bucketMask: UInt64
    /// Most recently used slot (-1 when empty).
    @usableFromInline var lruHead: Int32 = -1
    /// Least recently used slot.
    @usableFromInline var lruTail: Int32 = -1
    /// First free slot, chained through `Slot.chainNext`.
    @usableFromInline var freeHead: Int32
    @usableFromInline var nextID: UInt64 = 1
    @usableFromInline var sweepCursor = 0

    /// A table for at most `capacity` flows (1 ... 2^30). The daemon passes a random
    /// `hashSeed` (read from the system once at start) so peers cannot pile their flows into one
    /// bucket chain; tests may pass any value.
    public init(capacity: Int, timeouts: FlowTimeouts = FlowTimeouts(), hashSeed: UInt64 = 0) {
        precondition(capacity >= 1 && capacity <= 1 << 30, "FlowTable capacity must be 1...2^30")
        self.capacity = capacity
        self.hashSeed = hashSeed
        self.timeouts = timeouts
        var bucketCount = 1
        while bucketCount < 2 * capacity { bucketCount <<= 1 }
        bucketMask = UInt64(bucketCount - 1)
        buckets = .allocate(capacity: bucketCount)
        buckets.initialize(repeating: -1, count: bucketCount)
        slots = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Slot>.stride * capacity, alignment: 64)
            .bindMemory(to: Slot.self, capacity: capacity)
        let none = FlowKey(proto: .tcp, source: IPAddress(v4: 0), sourcePort: 0, destination: IPAddress(v4: 0), destinationPort: 0)
        for i in 0..<capacity {
            (slots + i).initialize(to: Slot(
                tag: 0, chainNext: i + 1 < capacity ? Int32(i + 1) : -1, lruPrev: -1, lruNext: -1,
                entry: FlowEntry(key: none, id: 0, originReversed: false, now: 0, tcpFlags: [])))
        }
        freeHead = 0
    }

    deinit {
        buckets.deallocate()
        slots.deinitialize(count: capacity)
        UnsafeMutableRawPointer(slots).deallocate()
    }

    /// Makes the next flow ids start above `last` (a daemon seeds it from the store's highest
    /// flow id, so ids stay unique across restarts). Never lowers the counter.
    public func seedIDs(after last: UInt64) {
        if nextID <= last { nextID = last &+ 1 }
    }

    /// The entry in slot `handle`.
    @inlinable public subscript(handle: FlowHandle) -> FlowEntry { slots[Int(handle.index)].entry }

    /// Accounts one packet of `length` bytes with key `key` (from `FlowKey.oriented`, `reversed`
    /// its direction bit) and TCP flags `tcpFlags` (ignored for other protocols): finds or opens
    /// its flow, ends the same key's entry first if it expired, evicts the least recently used
    /// flow when full, updates counters, TCP state and LRU order.
    @inlinable public func track(
        _ key: FlowKey, reversed: Bool, length: Int, tcpFlags: TCPFlags = [], now: Int64
    ) -> FlowTrackResult {
        let hash = key.hash64(seed: hashSeed)
        var ended: FlowRecord? = nil
        var opened = false
        var slot = find(key, hash: hash)
        if slot >= 0 && isExpired(slot, now: now) {
            ended = unlink(slot, reason: .expired)
            slot = -1
        }
        if slot < 0 {
            if freeHead < 0 {
                let victim = lruTail
                ended = unlink(victim, reason: isExpired(victim, now: now) ? .expired : .evicted)
            }
            slot = insert(key, hash: hash, reversed: reversed, tcpFlags: tcpFlags, now: now)
            opened = true
        }
        let e = slots + Int(slot)
        let isReply = reversed != e.pointee.entry.originReversed
        if isReply {
            e.pointee.entry.packetsReply &+= 1
            e.pointee.entry.bytesReply &+= UInt64(truncatingIfNeeded: length)
        } else {
            e.pointee.entry.packetsOriginal &+= 1
            e.pointee.entry.bytesOriginal &+= UInt64(truncatingIfNeeded: length)
        }
        e.pointee.entry.lastSeen = now
        if !opened && key.proto == .tcp { e.pointee.entry.tcp.update(flags: tcpFlags, isReply: isReply) }
        moveToFront(slot)
        return FlowTrackResult(handle: FlowHandle(slot), opened: opened, isReply: isReply, ended: ended)
    }

    /// Finds the live flow of `key` without counting a packet or touching LRU order. An entry
    /// found expired is ended (and returned in `ended`) instead.
    public func lookup(_ key: FlowKey, now: Int64) -> (handle: FlowHandle?, ended: FlowRecord?) {
        let slot = find(key, hash: key.hash64(seed: hashSeed))
        if slot < 0 { return (nil, nil) }
        if isExpired(slot, now: now) { return (nil, unlink(slot, reason: .expired)) }
        return (FlowHandle(slot), nil)
    }

    /// Stores the verdict taken for a flow under policy `generation`.
    public func setVerdict(_ handle: FlowHandle, generation: UInt64, action: UInt8, ruleIndex: Int32) {
        let e = slots + Int(handle.index)
        e.pointee.entry.verdictGeneration = generation
        e.pointee.entry.verdictAction = action
        e.pointee.entry.verdictRuleIndex = ruleIndex
    }

    /// Removes a flow (e.g. when its peer goes away) and returns its final record.
    @discardableResult public func remove(_ handle: FlowHandle) -> FlowRecord {
        unlink(handle.index, reason: .removed)
    }

    /// Examines the next `budget` slots (round robin over the whole table) and ends the expired
    /// flows among them, calling `onEnd` for each. Returns how many ended.
    @discardableResult public func expire(now: Int64, budget: Int, _ onEnd: (FlowRecord) -> Void = { _ in }) -> Int {
        var ended = 0
        for _ in 0..<min(max(budget, 0), capacity) {
            let slot = Int32(sweepCursor)
            sweepCursor = sweepCursor + 1 == capacity ? 0 : sweepCursor + 1
            if slots[Int(slot)].entry.id != 0 && isExpired(slot, now: now) {
                onEnd(unlink(slot, reason: .expired))
                ended += 1
            }
        }
        return ended
    }

    /// Calls `body` with every flow, most recently used first.
    public func forEach(_ body: (FlowHandle, FlowEntry) -> Void) {
        var i = lruHead
        while i >= 0 {
            body(FlowHandle(i), slots[Int(i)].entry)
            i = slots[Int(i)].lruNext
        }
    }

    // MARK: - Internals

    @inlinable func find(_ key: FlowKey, hash: UInt64) -> Int32 {
        let tag = UInt32(truncatingIfNeeded: hash >> 32)
        var i = buckets[Int(hash & bucketMask)]
        while i >= 0 {
            let s = slots + Int(i)
            if s.pointee.tag == tag && s.pointee.entry.key == key { return i }
            i = s.pointee.chainNext
        }
        return -1
    }

    @inlinable func isExpired(_ slot: Int32, now: Int64) -> Bool {
        let e = slots + Int(slot)
        return now &- e.pointee.entry.lastSeen >= timeouts.timeout(for: e.pointee.entry)
    }

    @usableFromInline func insert(_ key: FlowKey, hash: UInt64, reversed: Bool, tcpFlags: TCPFlags, now: Int64) -> Int32 {
        let slot = freeHead
        let s = slots + Int(slot)
        freeHead = s.pointee.chainNext
        let b = Int(hash & bucketMask)
        s.pointee.tag = UInt32(truncatingIfNeeded: hash >> 32)
        s.pointee.chainNext = buckets[b]
        buckets[b] = slot
        s.pointee.entry = FlowEntry(key: key, id: nextID, originReversed: reversed, now: now, tcpFlags: tcpFlags)
        nextID &+= 1
        count += 1
        stats.opened &+= 1
        // Link at the LRU head.
        s.pointee.lruPrev = -1
        s.pointee.lruNext = lruHead
        if lruHead >= 0 { slots[Int(lruHead)].lruPrev = slot } else { lruTail = slot }
        lruHead = slot
        return slot
    }

    @usableFromInline func unlink(_ slot: Int32, reason: FlowEndReason) -> FlowRecord {
        let s = slots + Int(slot)
        precondition(s.pointee.entry.id != 0, "FlowTable: handle of a slot that holds no flow")
        // Bucket chain.
        let b = Int(s.pointee.entry.key.hash64(seed: hashSeed) & bucketMask)
        if buckets[b] == slot {
            buckets[b] = s.pointee.chainNext
        } else {
            var i = buckets[b]
            while slots[Int(i)].chainNext != slot { i = slots[Int(i)].chainNext }
            slots[Int(i)].chainNext = s.pointee.chainNext
        }
        // LRU list.
        let prev = s.pointee.lruPrev
        let next = s.pointee.lruNext
        if prev >= 0 { slots[Int(prev)].lruNext = next } else { lruHead = next }
        if next >= 0 { slots[Int(next)].lruPrev = prev } else { lruTail = prev }
        let record = FlowRecord(entry: s.pointee.entry, reason: reason)
        // Free list.
        s.pointee.entry.id = 0
        s.pointee.chainNext = freeHead
        freeHead = slot
        count -= 1
        switch reason {
        case .expired: stats.expired &+= 1
        case .evicted: stats.evicted &+= 1
        case .removed: stats.removed &+= 1
        }
        return record
    }

    @inlinable func moveToFront(_ slot: Int32) {
        if lruHead == slot { return }
        let s = slots + Int(slot)
        let prev = s.pointee.lruPrev
        let next = s.pointee.lruNext
        // Not the head, so prev >= 0.
        slots[Int(prev)].lruNext = next
        if next >= 0 { slots[Int(next)].lruPrev = prev } else { lruTail = prev }
        s.pointee.lruPrev = -1
        s.pointee.lruNext = lruHead
        slots[Int(lruHead)].lruPrev = slot
        lruHead = slot
    }
}
