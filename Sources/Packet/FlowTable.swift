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
/// Per-owner accounting: every flow has an *owner* (the engine passes the WireGuard
/// peer handle's raw value; 0 for callers that do not attribute flows). Parallel arrays, also
/// allocated once, hold each slot's owner and its links in its owner's own LRU list, and each
/// owner's count, head and tail. When the table is full a new flow may end only an expired flow
/// (the global LRU tail, if it has timed out) or its own owner's least recently used flow —
/// never another owner's live flow; an owner with no flow of its own is refused
/// (`FlowRefusal.tableFull`). `track(…owner:maxFlows:allowNew:)` also refuses a new flow over
/// the owner's cap (`FlowRefusal.ownerCap`). Owners are indexed modulo `ownerCapacity`.
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

    /// Owner slots (a power of two); owner `o` is accounted at `o & (ownerCapacity - 1)`.
    public let ownerCapacity: Int
    /// Per slot: its owner's index, and its neighbours in that owner's LRU list.
    @usableFromInline let slotOwner: UnsafeMutablePointer<UInt32>
    @usableFromInline let ownerPrev: UnsafeMutablePointer<Int32>
    @usableFromInline let ownerNext: UnsafeMutablePointer<Int32>
    /// Per owner index: flows held, most and least recently used slot (-1 when none).
    @usableFromInline let ownerCount: UnsafeMutablePointer<Int32>
    @usableFromInline let ownerHead: UnsafeMutablePointer<Int32>
    @usableFromInline let ownerTail: UnsafeMutablePointer<Int32>
    /// Why the last refused `track` refused.
    public private(set) var lastRefusal: FlowRefusal = .tableFull

    /// A table for at most `capacity` flows (1 ... 2^30). The daemon passes a random
    /// `hashSeed` (read from the system once at start) so peers cannot pile their flows into one
    /// bucket chain; tests may pass any value.
    /// `owners`: how many owners are accounted apart (rounded up to a power of two; 12 bytes each).
    public init(capacity: Int, timeouts: FlowTimeouts = FlowTimeouts(), hashSeed: UInt64 = 0, owners: Int = 1 << 16) {
        precondition(capacity >= 1 && capacity <= 1 << 30, "FlowTable capacity must be 1...2^30")
        precondition(owners >= 1 && owners <= 1 << 24, "FlowTable owners must be 1...2^24")
        self.capacity = capacity
        var oc = 1
        while oc < owners { oc <<= 1 }
        ownerCapacity = oc
        slotOwner = .allocate(capacity: capacity)
        slotOwner.initialize(repeating: 0, count: capacity)
        ownerPrev = .allocate(capacity: capacity)
        ownerPrev.initialize(repeating: -1, count: capacity)
        ownerNext = .allocate(capacity: capacity)
        ownerNext.initialize(repeating: -1, count: capacity)
        ownerCount = .allocate(capacity: oc)
        ownerCount.initialize(repeating: 0, count: oc)
        ownerHead = .allocate(capacity: oc)
        ownerHead.initialize(repeating: -1, count: oc)
        ownerTail = .allocate(capacity: oc)
        ownerTail.initialize(repeating: -1, count: oc)
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
        slotOwner.deallocate()
        ownerPrev.deallocate()
        ownerNext.deallocate()
        ownerCount.deallocate()
        ownerHead.deallocate()
        ownerTail.deallocate()
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
    /// flow when full, updates counters, TCP state and LRU order. Every flow is owner 0's: use
    /// `track(_:reversed:length:tcpFlags:now:owner:maxFlows:allowNew:)` to attribute flows.
    @inlinable public func track(
        _ key: FlowKey, reversed: Bool, length: Int, tcpFlags: TCPFlags = [], now: Int64
    ) -> FlowTrackResult {
        // Owner 0 alone: a full table always holds an own flow to evict, so this never refuses.
        track(key, reversed: reversed, length: length, tcpFlags: tcpFlags, now: now, owner: 0)!
    }

    /// `track` for a flow of `owner`. A packet that would open a new flow is refused (nil, the
    /// reason in `lastRefusal`, counted in `stats`; nothing changes) when `allowNew` is false or
    /// the owner holds `maxFlows` already (`.ownerCap`), or when the table is full, its LRU flow
    /// has not expired and the owner has no flow of its own to give up (`.tableFull`). A full
    /// table otherwise ends its expired LRU flow, else the owner's own least recently used one.
    /// Packets of existing flows are never refused. The owner of a flow is the one that opened it.
    @inlinable public func track(
        _ key: FlowKey, reversed: Bool, length: Int, tcpFlags: TCPFlags = [], now: Int64,
        owner: UInt32, maxFlows: Int = .max, allowNew: Bool = true
    ) -> FlowTrackResult? {
        let hash = key.hash64(seed: hashSeed)
        var ended: FlowRecord? = nil
        var opened = false
        var slot = find(key, hash: hash)
        if slot >= 0 && isExpired(slot, now: now) {
            ended = unlink(slot, reason: .expired)
            slot = -1
        }
        if slot < 0 {
            let o = ownerIndex(owner)
            if !allowNew || Int(ownerCount[o]) >= maxFlows {
                return refuse(.ownerCap, ended: ended)
            }
            if freeHead < 0 {
                let tail = lruTail
                if isExpired(tail, now: now) {
                    ended = unlink(tail, reason: .expired)
                } else if ownerTail[o] >= 0 {
                    ended = unlink(ownerTail[o], reason: .evicted)
                } else {
                    return refuse(.tableFull, ended: ended)
                }
            }
            slot = insert(key, hash: hash, reversed: reversed, tcpFlags: tcpFlags, now: now)
            linkOwner(slot, owner)
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

    /// Flows `owner` holds now.
    @inlinable public func flowCount(owner: UInt32) -> Int { Int(ownerCount[ownerIndex(owner)]) }

    /// The owner of the flow in slot `handle` (the value `track` was given).
    @inlinable public func owner(of handle: FlowHandle) -> UInt32 { slotOwner[Int(handle.index)] }

    /// An owner's accounting index (owners are accounted modulo `ownerCapacity`).
    @inlinable func ownerIndex(_ owner: UInt32) -> Int { Int(owner & UInt32(ownerCapacity - 1)) }

    /// The flow a refused `track` ended (its key's expired entry), nil when none.
    public private(set) var lastRefusedEnded: FlowRecord? = nil

    /// Counts a refusal; the same key's expired entry it ended stays ended (`lastRefusedEnded`).
    @usableFromInline func refuse(_ reason: FlowRefusal, ended: FlowRecord?) -> FlowTrackResult? {
        switch reason {
        case .ownerCap: stats.refusedCap &+= 1
        case .tableFull: stats.refusedFull &+= 1
        }
        lastRefusal = reason
        lastRefusedEnded = ended
        return nil
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
        unlinkOwner(slot)
        let record = FlowRecord(entry: s.pointee.entry, reason: reason, owner: slotOwner[Int(slot)])
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

    @usableFromInline func linkOwner(_ slot: Int32, _ owner: UInt32) {
        let i = Int(slot)
        let o = ownerIndex(owner)
        slotOwner[i] = owner
        ownerPrev[i] = -1
        ownerNext[i] = ownerHead[o]
        if ownerHead[o] >= 0 { ownerPrev[Int(ownerHead[o])] = slot } else { ownerTail[o] = slot }
        ownerHead[o] = slot
        ownerCount[o] += 1
    }

    @usableFromInline func unlinkOwner(_ slot: Int32) {
        let i = Int(slot)
        let o = ownerIndex(slotOwner[i])
        let prev = ownerPrev[i]
        let next = ownerNext[i]
        if prev >= 0 { ownerNext[Int(prev)] = next } else { ownerHead[o] = next }
        if next >= 0 { ownerPrev[Int(next)] = prev } else { ownerTail[o] = prev }
        ownerCount[o] -= 1
    }

    @inlinable func moveToFront(_ slot: Int32) {
        moveToOwnerFront(slot)
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

    @inlinable func moveToOwnerFront(_ slot: Int32) {
        let i = Int(slot)
        let o = ownerIndex(slotOwner[i])
        if ownerHead[o] == slot { return }
        let prev = ownerPrev[i]
        let next = ownerNext[i]
        ownerNext[Int(prev)] = next
        if next >= 0 { ownerPrev[Int(next)] = prev } else { ownerTail[o] = prev }
        ownerPrev[i] = -1
        ownerNext[i] = ownerHead[o]
        ownerPrev[Int(ownerHead[o])] = slot
        ownerHead[o] = slot
    }
}

/// Why `FlowTable.track(…owner:…)` refused a new flow.
public enum FlowRefusal: Sendable, Equatable {
    /// The owner is at its cap (`maxFlows`) or may not open flows now (`allowNew` false).
    case ownerCap
    /// The table is full of live flows of other owners.
    case tableFull
}
