import Core
/// What the gateway learned from the DNS answers it forwarded to each peer: for a (peer,
/// address) pair, the names that peer looked up and got that address for (the query name and
/// the CNAME chain to the address), each with its TTL, so a later flow from the peer to the
/// address carries the name it was looked up by (docs/policy.md).
///
/// Bounded and preallocated: at most `capacity` addresses across all peers, each with a
/// `bytesPerAddress` area of names (every name costs its length + 9 bytes; the query name
/// always fits). The least recently used address is evicted when full; within an address, a new
/// name first replaces expired ones, then the names that expire soonest. TTLs are clamped to
/// `[ttlFloor, ttlCeiling]` seconds, so a resolver's TTL 0 still names the flow that follows.
/// Time is monotonic milliseconds passed in; nothing here does I/O, and no operation allocates.
///
/// Not thread-safe: owned by the data path (one instance per engine, under the flow lock).
public final class AddressNameCache {
    /// The most addresses held (all peers together).
    public let capacity: Int
    /// The bytes of names one address may hold.
    public let bytesPerAddress: Int
    /// The shortest TTL honoured, seconds.
    public let ttlFloor: UInt32
    /// The longest TTL honoured, seconds.
    public let ttlCeiling: UInt32
    /// Addresses held now (some may have only expired names until looked up or evicted).
    public private(set) var count = 0
    /// Addresses evicted to make room, since creation.
    public private(set) var evictions = 0

    /// Per name: length (1 byte), expiry in ms (8 bytes, native order), then the bytes.
    static let nameHeader = 9

    struct Slot {
        var peer: UInt32 = 0
        var used: Int32 = 0  // bytes of names in use; -1 = free slot
        var chainNext: Int32 = -1
        var lruPrev: Int32 = -1
        var lruNext: Int32 = -1
        var address = IPAddress(v4: 0)
    }

    private let slots: UnsafeMutablePointer<Slot>
    private let names: UnsafeMutableRawPointer
    private let buckets: UnsafeMutablePointer<Int32>
    private let bucketMask: Int
    private let hashSeed: UInt64
    private var lruHead: Int32 = -1
    private var lruTail: Int32 = -1
    private var freeHead: Int32 = 0

    /// A cache of at most `capacity` addresses (1 ... 2^24) of `bytesPerAddress` (262 ... 65535)
    /// bytes of names each; TTLs clamped to `ttlFloor ... ttlCeiling` seconds. The daemon
    /// passes a random `hashSeed`, so peers cannot choose colliding addresses.
    public init(capacity: Int, bytesPerAddress: Int = 512, ttlFloor: UInt32 = 60, ttlCeiling: UInt32 = 86_400, hashSeed: UInt64 = 0) {
        precondition(capacity >= 1 && capacity <= 1 << 24, "AddressNameCache capacity must be 1...2^24")
        precondition(bytesPerAddress >= 253 + AddressNameCache.nameHeader && bytesPerAddress <= 65535, "bytesPerAddress must be 262...65535")
        precondition(ttlFloor <= ttlCeiling, "ttlFloor must not exceed ttlCeiling")
        self.capacity = capacity
        self.bytesPerAddress = bytesPerAddress
        self.ttlFloor = ttlFloor
        self.ttlCeiling = ttlCeiling
        self.hashSeed = hashSeed
        slots = .allocate(capacity: capacity)
        for i in 0..<capacity {
            var s = Slot()
            s.used = -1
            s.chainNext = i + 1 < capacity ? Int32(i + 1) : -1
            (slots + i).initialize(to: s)
        }
        names = .allocate(byteCount: capacity * bytesPerAddress, alignment: 16)
        var b = 1
        while b < capacity * 2 { b <<= 1 }
        bucketMask = b - 1
        buckets = .allocate(capacity: b)
        buckets.initialize(repeating: -1, count: b)
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        names.deallocate()
        buckets.deallocate()
    }

    /// The TTL actually used for `ttl` seconds.
    @inlinable public func clampedTTL(_ ttl: UInt32) -> UInt32 { min(max(ttl, ttlFloor), ttlCeiling) }

    /// Records that `peer` looked up `name` (ASCII, compared as given: pass lower-case names,
    /// as `DNSAnswers` gives them) and got `address` with `ttl` seconds, at `now` ms. Names
    /// longer than 253 bytes or empty are ignored.
    public func learn(peer: UInt32, address: IPAddress, name: UnsafeRawBufferPointer, ttl: UInt32, now: Int64) {
        guard !name.isEmpty && name.count <= 253 else { return }
        let expiry = now &+ Int64(clampedTTL(ttl)) * 1000
        let s = findOrInsert(peer: peer, address: address)
        touch(s)
        let base = names + Int(s) * bytesPerAddress
        var used = Int(slots[Int(s)].used)
        // Already there: take the new expiry.
        var o = 0
        while o < used {
            let length = Int(base.load(fromByteOffset: o, as: UInt8.self))
            if length == name.count && memoryEqual(base + o + AddressNameCache.nameHeader, name) {
                base.storeBytes(of: expiry, toByteOffset: o + 1, as: Int64.self)
                return
            }
            o += AddressNameCache.nameHeader + length
        }
        let need = AddressNameCache.nameHeader + name.count
        if used + need > bytesPerAddress { used = compact(base, used, now: now) }
        while used + need > bytesPerAddress { used = dropSoonest(base, used) }
        base.storeBytes(of: UInt8(name.count), toByteOffset: used, as: UInt8.self)
        base.storeBytes(of: expiry, toByteOffset: used + 1, as: Int64.self)
        (base + used + AddressNameCache.nameHeader).copyMemory(from: name.baseAddress!, byteCount: name.count)
        slots[Int(s)].used = Int32(used + need)
    }

    /// Records every address of a parsed response for `peer`: each with the query name and
    /// the chain names leading to it, and its TTL.
    public func learn(peer: UInt32, from answers: DNSAnswers, now: Int64) {
        for i in 0..<answers.answerCount {
            let a = answers.answer(i)
            learn(peer: peer, address: a.address, name: answers.queryName, ttl: a.ttl, now: now)
            for d in 0..<a.chainDepth {
                learn(peer: peer, address: a.address, name: answers.chain(d), ttl: a.ttl, now: now)
            }
        }
    }

    /// The unexpired names `peer` looked up for `address` (marks it recently used). An address
    /// whose names all expired is removed.
    public func names(peer: UInt32, address: IPAddress, now: Int64) -> AddressNames {
        let s = find(peer: peer, address: address)
        guard s >= 0 else { return .none }
        let base = names + Int(s) * bytesPerAddress
        let used = compact(base, Int(slots[Int(s)].used), now: now)
        guard used > 0 else {
            remove(s)
            return .none
        }
        slots[Int(s)].used = Int32(used)
        touch(s)
        return AddressNames(base: UnsafeRawPointer(base), used: used, now: now)
    }

    /// Forgets everything learned for `peer` (a removed peer). O(capacity).
    public func forget(peer: UInt32) {
        for i in 0..<capacity where slots[i].used >= 0 && slots[i].peer == peer { remove(Int32(i)) }
    }

    // MARK: - Table

    private func bucket(_ peer: UInt32, _ a: IPAddress) -> Int {
        var h = hashSeed ^ (a.high &* 0x9E37_79B9_7F4A_7C15) ^ (a.low &+ UInt64(peer) << 32 | (a.isIPv6 ? 1 : 0))
        h ^= h >> 31
        h = h &* 0xBF58_476D_1CE4_E5B9
        h ^= h >> 29
        h = h &* 0x94D0_49BB_1331_11EB
        h ^= h >> 32
        return Int(truncatingIfNeeded: h) & bucketMask
    }

    private func find(peer: UInt32, address: IPAddress) -> Int32 {
        var s = buckets[bucket(peer, address)]
        while s >= 0 {
            if slots[Int(s)].peer == peer && slots[Int(s)].address == address { return s }
            s = slots[Int(s)].chainNext
        }
        return -1
    }

    private func findOrInsert(peer: UInt32, address: IPAddress) -> Int32 {
        let found = find(peer: peer, address: address)
        if found >= 0 { return found }
        if freeHead < 0 {
            evictions += 1
            remove(lruTail)
        }
        let s = freeHead
        freeHead = slots[Int(s)].chainNext
        let b = bucket(peer, address)
        slots[Int(s)] = Slot(peer: peer, used: 0, chainNext: buckets[b], lruPrev: -1, lruNext: -1, address: address)
        buckets[b] = s
        // Link at the LRU head.
        slots[Int(s)].lruNext = lruHead
        if lruHead >= 0 { slots[Int(lruHead)].lruPrev = s }
        lruHead = s
        if lruTail < 0 { lruTail = s }
        count += 1
        return s
    }

    private func touch(_ s: Int32) {
        guard lruHead != s else { return }
        let prev = slots[Int(s)].lruPrev
        let next = slots[Int(s)].lruNext
        if prev >= 0 { slots[Int(prev)].lruNext = next }
        if next >= 0 { slots[Int(next)].lruPrev = prev } else { lruTail = prev }
        slots[Int(s)].lruPrev = -1
        slots[Int(s)].lruNext = lruHead
        if lruHead >= 0 { slots[Int(lruHead)].lruPrev = s }
        lruHead = s
    }

    private func remove(_ s: Int32) {
        let slot = slots[Int(s)]
        // Unchain from its bucket.
        let b = bucket(slot.peer, slot.address)
        if buckets[b] == s {
            buckets[b] = slot.chainNext
        } else {
            var p = buckets[b]
            while p >= 0 && slots[Int(p)].chainNext != s { p = slots[Int(p)].chainNext }
            if p >= 0 { slots[Int(p)].chainNext = slot.chainNext }
        }
        // Unlink from the LRU list.
        if slot.lruPrev >= 0 { slots[Int(slot.lruPrev)].lruNext = slot.lruNext } else { lruHead = slot.lruNext }
        if slot.lruNext >= 0 { slots[Int(slot.lruNext)].lruPrev = slot.lruPrev } else { lruTail = slot.lruPrev }
        slots[Int(s)].used = -1
        slots[Int(s)].chainNext = freeHead
        freeHead = s
        count -= 1
    }

    // MARK: - Names of one address

    /// Removes expired names, keeping the order; returns the bytes in use.
    private func compact(_ base: UnsafeMutableRawPointer, _ used: Int, now: Int64) -> Int {
        var read = 0
        var write = 0
        while read < used {
            let length = Int(base.load(fromByteOffset: read, as: UInt8.self))
            let size = AddressNameCache.nameHeader + length
            let expiry = base.loadUnaligned(fromByteOffset: read + 1, as: Int64.self)
            if expiry > now {
                if write != read { (base + write).copyMemory(from: base + read, byteCount: size) }
                write += size
            }
            read += size
        }
        return write
    }

    /// Removes the name that expires first; returns the bytes in use.
    private func dropSoonest(_ base: UnsafeMutableRawPointer, _ used: Int) -> Int {
        var o = 0
        var victim = 0
        var soonest = Int64.max
        while o < used {
            let expiry = base.loadUnaligned(fromByteOffset: o + 1, as: Int64.self)
            if expiry < soonest {
                soonest = expiry
                victim = o
            }
            o += AddressNameCache.nameHeader + Int(base.load(fromByteOffset: o, as: UInt8.self))
        }
        let size = AddressNameCache.nameHeader + Int(base.load(fromByteOffset: victim, as: UInt8.self))
        (base + victim).copyMemory(from: base + victim + size, byteCount: used - victim - size)
        return used - size
    }

    private func memoryEqual(_ p: UnsafeMutableRawPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        for k in 0..<b.count where p.load(fromByteOffset: k, as: UInt8.self) != b[k] { return false }
        return true
    }
}
