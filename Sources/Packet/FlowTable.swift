/// A bounded connection-tracking table: O(1) lookup and insert, least-recently-used eviction
/// when full, idle timeouts per protocol and TCP state (`FlowTimeouts`), per-flow counters each
/// way, and a cached verdict slot per flow. Pure: time comes in as `now` (monotonic
/// milliseconds); nothing here does I/O.
///
/// All storage is allocated once in `init`: a flat array of `capacity` entries, a bucket array
/// (a power of two ≥ 2 × capacity) of index-chained hash lists, and an intrusive doubly linked
/// LRU list through the entries. No operation allocates.
///
/// Expiry is lazy — an entry found expired by `track`/`lookup` is ended then — plus an
/// incremental `expire(now:budget:_:)` sweep that the caller runs on a timer, so every idle
/// entry is found within `capacity / budget` sweeps.
///
/// Not thread-safe: one data-path thread owns it.
public final class FlowTable {
    /// Links of one slot: hash, next in its bucket chain (or in the free list), LRU neighbours.
    @usableFromInline struct Links {
        @usableFromInline var hash: UInt64 = 0
        @usableFromInline var chainNext: Int32 = -1
        @usableFromInline var lruPrev: Int32 = -1
        @usableFromInline var lruNext: Int32 = -1
        @usableFromInline var inUse = false
    }

    /// The most flows the table holds.
    public let capacity: Int
    /// The idle timeouts in force.
    public var timeouts: FlowTimeouts
    /// Flows in the table now.
    public private(set) var count = 0
    /// Counters since creation.
    public private(set) var stats = FlowTableStats()

    @usableFromInline let entries: UnsafeMutablePointer<FlowEntry>
    @usableFromInline let links: UnsafeMutablePointer<Links>
    @usableFromInline let buckets: UnsafeMutablePointer<Int32>
    @usableFromInline let bucketMask: UInt64
    /// Most recently used slot (-1 when empty).
    @usableFromInline var lruHead: Int32 = -1
    /// Least recently used slot.
    @usableFromInline var lruTail: Int32 = -1
    /// First free slot, chained through `Links.chainNext`.
    @usableFromInline var freeHead: Int32
    @usableFromInline var nextID: UInt64 = 1
    @usableFromInline var sweepCursor = 0

    /// A table for at most `capacity` flows (1 ... 2^30).
    public init(capacity: Int, timeouts: FlowTimeouts = FlowTimeouts()) {
        precondition(capacity >= 1 && capacity <= 1 << 30, "FlowTable capacity must be 1...2^30")
        self.capacity = capacity
        self.timeouts = timeouts
        var bucketCount = 1
        while bucketCount < 2 * capacity { bucketCount <<= 1 }
        bucketMask = UInt64(bucketCount - 1)
        buckets = .allocate(capacity: bucketCount)
        buckets.initialize(repeating: -1, count: bucketCount)
        entries = .allocate(capacity: capacity)
        let blank = FlowEntry(
            key: FlowKey(proto: .tcp, source: IPAddress(v4: 0), sourcePort: 0, destination: IPAddress(v4: 0), destinationPort: 0),
            id: 0, originReversed: false, firstSeen: 0, lastSeen: 0, packetsOriginal: 0, bytesOriginal: 0,
            packetsReply: 0, bytesReply: 0, tcp: TCPTracker(firstFlags: []), verdictGeneration: 0, verdictAction: 0,
            verdictRuleIndex: -1)
        entries.initialize(repeating: blank, count: capacity)
        links = .allocate(capacity: capacity)
        links.initialize(repeating: Links(), count: capacity)
        for i in 0..<capacity { links[i].chainNext = i + 1 < capacity ? Int32(i + 1) : -1 }
        freeHead = 0
    }

    deinit {
        buckets.deallocate()
        entries.deinitialize(count: capacity)
        entries.deallocate()
        links.deallocate()
    }

    /// The entry in slot `handle`.
    @inlinable public subscript(handle: FlowHandle) -> FlowEntry { entries[Int(handle.index)] }

    /// Accounts one packet of `length` bytes with key `key` (from `FlowKey.oriented`, `reversed`
    /// its direction bit) and TCP flags `tcpFlags` (ignored for other protocols): finds or opens
    /// its flow, ends the same key's entry first if it expired, evicts the least recently used
    /// flow when full, updates counters, TCP state and LRU order.
    @inlinable public func track(
        _ key: FlowKey, reversed: Bool, length: Int, tcpFlags: TCPFlags = [], now: Int64
    ) -> FlowTrackResult {
        let hash = key.hash64
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
        let isReply: Bool
        do {
            let e = entries + Int(slot)
            isReply = reversed != e.pointee.originReversed
            if isReply {
                e.pointee.packetsReply &+= 1
                e.pointee.bytesReply &+= UInt64(truncatingIfNeeded: length)
            } else {
                e.pointee.packetsOriginal &+= 1
                e.pointee.bytesOriginal &+= UInt64(truncatingIfNeeded: length)
            }
            e.pointee.lastSeen = now
            if !opened && key.proto == .tcp { e.pointee.tcp.update(flags: tcpFlags, isReply: isReply) }
        }
        moveToFront(slot)
        return FlowTrackResult(handle: FlowHandle(slot), opened: opened, isReply: isReply, ended: ended)
    }

    /// Finds the live flow of `key` without counting a packet or touching LRU order. An entry
    /// found expired is ended (and returned in `ended`) instead.
    public func lookup(_ key: FlowKey, now: Int64) -> (handle: FlowHandle?, ended: FlowRecord?) {
        let slot = find(key, hash: key.hash64)
        if slot < 0 { return (nil, nil) }
        if isExpired(slot, now: now) { return (nil, unlink(slot, reason: .expired)) }
        return (FlowHandle(slot), nil)
    }

    /// Stores the verdict taken for a flow under policy `generation`.
    public func setVerdict(_ handle: FlowHandle, generation: UInt64, action: UInt8, ruleIndex: Int32) {
        let e = entries + Int(handle.index)
        e.pointee.verdictGeneration = generation
        e.pointee.verdictAction = action
        e.pointee.verdictRuleIndex = ruleIndex
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
            if links[Int(slot)].inUse && isExpired(slot, now: now) {
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
            body(FlowHandle(i), entries[Int(i)])
            i = links[Int(i)].lruNext
        }
    }

    // MARK: - Internals

    @inlinable func find(_ key: FlowKey, hash: UInt64) -> Int32 {
        var i = buckets[Int(hash & bucketMask)]
        while i >= 0 {
            if links[Int(i)].hash == hash && entries[Int(i)].key == key { return i }
            i = links[Int(i)].chainNext
        }
        return -1
    }

    @inlinable func isExpired(_ slot: Int32, now: Int64) -> Bool {
        let e = entries + Int(slot)
        return now &- e.pointee.lastSeen >= timeouts.timeout(for: e.pointee)
    }

    @usableFromInline func insert(_ key: FlowKey, hash: UInt64, reversed: Bool, tcpFlags: TCPFlags, now: Int64) -> Int32 {
        let slot = freeHead
        let l = links + Int(slot)
        freeHead = l.pointee.chainNext
        let b = Int(hash & bucketMask)
        l.pointee.hash = hash
        l.pointee.chainNext = buckets[b]
        l.pointee.inUse = true
        l.pointee.lruPrev = -1
        l.pointee.lruNext = -1
        buckets[b] = slot
        entries[Int(slot)] = FlowEntry(
            key: key, id: nextID, originReversed: reversed, firstSeen: now, lastSeen: now, packetsOriginal: 0,
            bytesOriginal: 0, packetsReply: 0, bytesReply: 0, tcp: TCPTracker(firstFlags: tcpFlags),
            verdictGeneration: 0, verdictAction: 0, verdictRuleIndex: -1)
        nextID &+= 1
        count += 1
        stats.opened &+= 1
        // Link at the LRU head.
        l.pointee.lruNext = lruHead
        if lruHead >= 0 { links[Int(lruHead)].lruPrev = slot } else { lruTail = slot }
        lruHead = slot
        return slot
    }

    @usableFromInline func unlink(_ slot: Int32, reason: FlowEndReason) -> FlowRecord {
        let s = Int(slot)
        precondition(links[s].inUse, "FlowTable: handle of a slot that holds no flow")
        // Bucket chain.
        let b = Int(links[s].hash & bucketMask)
        if buckets[b] == slot {
            buckets[b] = links[s].chainNext
        } else {
            var i = buckets[b]
            while links[Int(i)].chainNext != slot { i = links[Int(i)].chainNext }
            links[Int(i)].chainNext = links[s].chainNext
        }
        // LRU list.
        let prev = links[s].lruPrev
        let next = links[s].lruNext
        if prev >= 0 { links[Int(prev)].lruNext = next } else { lruHead = next }
        if next >= 0 { links[Int(next)].lruPrev = prev } else { lruTail = prev }
        // Free list.
        links[s].inUse = false
        links[s].chainNext = freeHead
        freeHead = slot
        count -= 1
        switch reason {
        case .expired: stats.expired &+= 1
        case .evicted: stats.evicted &+= 1
        case .removed: stats.removed &+= 1
        }
        return FlowRecord(entry: entries[s], reason: reason)
    }

    @inlinable func moveToFront(_ slot: Int32) {
        if lruHead == slot { return }
        let l = links + Int(slot)
        let prev = l.pointee.lruPrev
        let next = l.pointee.lruNext
        // Not the head, so prev >= 0.
        links[Int(prev)].lruNext = next
        if next >= 0 { links[Int(next)].lruPrev = prev } else { lruTail = prev }
        l.pointee.lruPrev = -1
        l.pointee.lruNext = lruHead
        links[Int(lruHead)].lruPrev = slot
        lruHead = slot
    }
}
