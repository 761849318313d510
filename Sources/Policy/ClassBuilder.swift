import Core
/// A 128-bit key for the one-dimensional domains the compiler partitions (ports, addresses, …).
struct Key128: Hashable, Comparable, Sendable {
    var hi: UInt64
    var lo: UInt64
    init(_ hi: UInt64, _ lo: UInt64) {
        self.hi = hi
        self.lo = lo
    }
    init(_ v: Int) { self.init(0, UInt64(v)) }
    static func < (a: Key128, b: Key128) -> Bool { (a.hi, a.lo) < (b.hi, b.lo) }
    /// self + 1 (callers never pass the maximum).
    var next: Key128 { lo == .max ? Key128(hi &+ 1, 0) : Key128(hi, lo + 1) }
}

/// One match dimension's classes. A class lists, sorted, the rules *anchored* in this dimension
/// that accept its values: the candidates this dimension contributes. Host classes also list the
/// `host` rules anchored elsewhere that accept them (`verify…`), since a host name has no interval
/// a rule could keep; every other dimension verifies a candidate against the rule's own intervals
/// (`RuleChecks`). Memory is proportional to the rules' sizes and overlaps, never rules × classes.
struct Dimension: Sendable {
    /// Class → first index of its anchor list in `CompiledPolicy.lists`.
    var anchorStart: [Int32] = []
    /// Class → length of its anchor list.
    var anchorCount: [Int32] = []
    /// Host dimension only: class → its verify list in `CompiledPolicy.lists`.
    var verifyStart: [Int32] = []
    var verifyCount: [Int32] = []
}

/// A rule's intervals in one dimension: appends rule `r`'s inclusive intervals to the buffer and
/// returns true, or returns false when the rule accepts anything there (the buffer untouched).
/// Computed on demand, so compiling keeps no per-rule copy of them.
typealias IntervalSource = (_ rule: Int, _ into: inout [(Key128, Key128)]) -> Bool

/// A class's identity in one dimension: its interned anchor and verify lists.
struct ClassKey: Hashable {
    var anchors: Int32, anchorCount: Int32, verify: Int32, verifyCount: Int32
}

/// Builds per-dimension equivalence classes: the domain is cut into elementary intervals where
/// the set of rules *anchored* in the dimension that accept a value changes, and each distinct set
/// is one class. Identical lists are stored once, in `lists`, shared by all dimensions.
struct ClassBuilder {
    /// Every distinct rule list, back to back.
    var lists: [Int32] = []
    /// Open addressing over the distinct lists: 0 = empty, k + 1 = list k (`internedStart`,
    /// `internedCount`), probed by a hash of the contents (no array per list is kept).
    var internSlots: [Int32] = [Int32](repeating: 0, count: 1024)
    var internedStart: [Int32] = []
    var internedCount: [Int32] = []

    static func hash(_ list: UnsafeBufferPointer<Int32>) -> Int {
        var h = Hasher()
        h.combine(list.count)
        for x in list { h.combine(x) }
        return h.finalize()
    }

    /// The offset of `list` in `lists`, adding it when new.
    mutating func intern(_ list: [Int32]) -> Int32 {
        if list.isEmpty { return 0 }
        return list.withUnsafeBufferPointer { intern($0).start }
    }

    /// The offset of `list` in `lists` and its id (0, 1, … in order of first interning; -1 for
    /// the empty list), adding it when new.
    mutating func intern(_ list: UnsafeBufferPointer<Int32>) -> (start: Int32, id: Int) {
        if list.isEmpty { return (0, -1) }
        if 2 * (internedStart.count + 1) > internSlots.count { growInternSlots() }
        let mask = internSlots.count - 1
        var slot = ClassBuilder.hash(list) & mask
        while true {
            let k = Int(internSlots[slot])
            if k == 0 { break }
            let start = Int(internedStart[k - 1]), count = Int(internedCount[k - 1])
            if count == list.count && lists.withUnsafeBufferPointer({ $0[start..<start + count].elementsEqual(list) }) {
                return (Int32(start), k - 1)
            }
            slot = (slot + 1) & mask
        }
        let s = Int32(lists.count)
        lists.append(contentsOf: list)
        internedStart.append(s)
        internedCount.append(Int32(list.count))
        internSlots[slot] = Int32(internedStart.count)
        return (s, internedStart.count - 1)
    }

    mutating func growInternSlots() {
        var slots = [Int32](repeating: 0, count: internSlots.count * 2)
        let mask = slots.count - 1
        lists.withUnsafeBufferPointer { l in
            for k in internedStart.indices {
                let start = Int(internedStart[k])
                var slot = ClassBuilder.hash(UnsafeBufferPointer(rebasing: l[start..<start + Int(internedCount[k])])) & mask
                while slots[slot] != 0 { slot = (slot + 1) & mask }
                slots[slot] = Int32(k + 1)
            }
        }
        internSlots = slots
    }

    /// The class of (`anchors`, `verify`) in `dim`, one per distinct pair, added when new. Only the
    /// host dimension has verify lists (`withVerify`).
    mutating func classID(anchors: [Int32], verify: [Int32] = [], withVerify: Bool = false, _ dim: inout Dimension, _ known: inout [ClassKey: Int32]) -> Int32 {
        let key = ClassKey(anchors: intern(anchors), anchorCount: Int32(anchors.count), verify: intern(verify), verifyCount: Int32(verify.count))
        if let c = known[key] { return c }
        let c = Int32(dim.anchorStart.count)
        dim.anchorStart.append(key.anchors)
        dim.anchorCount.append(key.anchorCount)
        if withVerify {
            dim.verifyStart.append(key.verify)
            dim.verifyCount.append(key.verifyCount)
        }
        known[key] = c
        return c
    }

    /// Partitions `[0, max]`. `intervals` gives, for each of the `count` rules, what it matches in
    /// this dimension; only rules with `anchored(r)` take part. Calls `emit` with the start of each
    /// elementary interval, ascending (the first is 0), and its class; adjacent intervals of the
    /// same class are merged. A domain of at most 2^32 values sorts its events packed in 64 bits
    /// (key, rule, start or end), a wider one as (128-bit key, rule, ±1).
    mutating func partition(max: Key128, count: Int, intervals: IntervalSource, anchored: (Int) -> Bool, _ dim: inout Dimension,
                            sizeHint: (Int) -> Void = { _ in }, emit: (Key128, Int32) -> Void) {
        var buffer: [(Key128, Key128)] = []
        var n = 0
        for r in 0..<count where anchored(r) {
            buffer.removeAll(keepingCapacity: true)
            n += intervals(r, &buffer) ? 2 * buffer.count : 1
        }
        func each(_ body: (Key128, Int32, Bool) -> Void) {  // (key, rule, starts there)
            for r in 0..<count where anchored(r) {
                buffer.removeAll(keepingCapacity: true)
                if !intervals(r, &buffer) { buffer.append((Key128(0, 0), max)) }
                for (lo, hi) in buffer {
                    body(lo, Int32(r), true)
                    if hi < max { body(hi.next, Int32(r), false) }
                }
            }
        }
        if max.hi == 0 && max.lo <= UInt64(UInt32.max) {
            var events: [UInt64] = []
            events.reserveCapacity(n)
            each { key, rule, start in events.append(key.lo << 32 | UInt64(UInt32(rule) << 1 | (start ? 1 : 0))) }
            events.sort()
            sizeHint(events.count + 1)  // at most one interval per event, and the one at 0
            sweep(events.count, key: { Key128(0, events[$0] >> 32) },
                  event: { let v = UInt32(truncatingIfNeeded: events[$0]); return (Int32(v >> 1), v & 1 == 1 ? 1 : -1) }, &dim, emit)
        } else {
            var events: [(key: Key128, rule: Int32, delta: Int32)] = []
            events.reserveCapacity(n)
            each { key, rule, start in events.append((key, rule, start ? 1 : -1)) }
            events.sort { $0.key < $1.key }
            sizeHint(events.count + 1)
            sweep(events.count, key: { events[$0].key }, event: { (events[$0].rule, events[$0].delta) }, &dim, emit)
        }
    }

    /// Walks `count` events sorted by key: the anchored rules accepting each point, and its class.
    mutating func sweep(_ count: Int, key: (Int) -> Key128, event: (Int) -> (rule: Int32, delta: Int32), _ dim: inout Dimension,
                        _ emit: (Key128, Int32) -> Void) {
        // Class of each interned list id in this dimension (-1: none yet); the empty list's apart.
        var classOfList: [Int32] = []
        var emptyClass: Int32 = -1
        var counts: [Int32: Int32] = [:]
        var active: [Int32] = []  // sorted: the anchored rules accepting the current point
        var last: Int32 = -1
        var i = 0
        var point = Key128(0, 0)
        while true {
            while i < count && key(i) == point {
                let e = event(i)
                let before = counts[e.rule, default: 0]
                let after = before + e.delta
                counts[e.rule] = after == 0 ? nil : after
                if before == 0 && after > 0 { active.insert(e.rule, at: ClassBuilder.lowerBound(active, e.rule)) }
                if before > 0 && after == 0 { active.remove(at: ClassBuilder.lowerBound(active, e.rule)) }
                i += 1
            }
            let (start, id) = active.withUnsafeBufferPointer { intern($0) }
            var c: Int32
            if id < 0 {
                c = emptyClass
            } else {
                while classOfList.count <= id { classOfList.append(-1) }
                c = classOfList[id]
            }
            if c < 0 {
                c = Int32(dim.anchorStart.count)
                dim.anchorStart.append(start)
                dim.anchorCount.append(Int32(active.count))
                if id < 0 { emptyClass = c } else { classOfList[id] = c }
            }
            if last != c {
                emit(point, c)
                last = c
            }
            guard i < count else { break }
            point = key(i)
        }
    }

    /// `partition` expanded into a direct table (value → class) for a small domain `0...max`.
    mutating func table(max: Int, count: Int, intervals: IntervalSource, anchored: (Int) -> Bool, _ dim: inout Dimension) -> [Int32] {
        var table = [Int32](repeating: 0, count: max + 1)
        var from = 0
        var current: Int32 = 0
        partition(max: Key128(max), count: count, intervals: intervals, anchored: anchored, &dim) { start, c in
            let lo = Int(start.lo)
            for v in from..<lo { table[v] = current }
            from = lo
            current = c
        }
        for v in from...max { table[v] = current }
        return table
    }

    /// The points of `[0, max]` where the set of rules accepting a value changes, ascending, for
    /// every rule that constrains the dimension (not only the anchored ones); 0 is included
    /// unless the set at 0 is the set at `max` (a domain that wraps, like the week).
    static func changePoints(max: Key128, count: Int, intervals: IntervalSource) -> [Key128] {
        var events: [(key: Key128, rule: Int32, delta: Int32)] = []
        var wraps = true
        var list: [(Key128, Key128)] = []
        for r in 0..<count {
            list.removeAll(keepingCapacity: true)
            guard intervals(r, &list) else { continue }
            var atZero = false, atMax = false
            for (lo, hi) in list {
                events.append((lo, Int32(r), 1))
                if hi < max { events.append((hi.next, Int32(r), -1)) }
                if lo == Key128(0, 0) { atZero = true }
                if hi == max { atMax = true }
            }
            if atZero != atMax { wraps = false }
        }
        events.sort { $0.key < $1.key }
        var counts: [Int32: Int32] = [:]
        var points: [Key128] = wraps ? [] : [Key128(0, 0)]
        var i = 0
        while i < events.count {
            let point = events[i].key
            var touched: [Int32: Bool] = [:]  // rule → accepted just before this point
            while i < events.count && events[i].key == point {
                let e = events[i]
                let before = counts[e.rule, default: 0]
                if touched[e.rule] == nil { touched[e.rule] = before > 0 }
                let after = before + e.delta
                counts[e.rule] = after == 0 ? nil : after
                i += 1
            }
            let changed = touched.contains { rule, was in was != (counts[rule] != nil) }
            if changed && point != Key128(0, 0) { points.append(point) }
        }
        return points
    }

    /// The first index of `list` (sorted) whose element is ≥ `v`.
    static func lowerBound(_ list: [Int32], _ v: Int32) -> Int {
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if list[mid] < v { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// Every rule's own accepted values, to verify a candidate in the dimensions it was not found
/// through: per rule and slot, its intervals sorted and merged (so memory is the rules' size).
/// Slots with 32-bit keys: direction×tier×protocol, peer id, source v4, destination v4, source
/// port, destination port (65536 = no port), minute of week; with 128-bit keys: source v6,
/// destination v6. `mask[r]` has bit `Dim.rawValue` set for each dimension rule `r` must be
/// checked in (constrained there and not its anchor).
struct RuleChecks: Sendable {
    static let slots32 = 7
    static let slots128 = 2
    var mask: [UInt8] = []
    /// Rule r, slot s: bounds `offsets32[r*7+s] ..< offsets32[r*7+s+1]` of `bounds32` (lo, hi pairs).
    var offsets32: [Int32] = [0]
    var bounds32: [UInt32] = []
    var offsets128: [Int32] = [0]
    var bounds128: [Key128] = []

    /// Appends rule intervals to a slot (merged, sorted).
    static func merged(_ list: [(Key128, Key128)]) -> [(Key128, Key128)] {
        let sorted = list.sorted { $0.0 < $1.0 }
        var out: [(Key128, Key128)] = []
        for (lo, hi) in sorted {
            if let last = out.last, last.1 == Key128(.max, .max) || lo <= last.1.next {
                if hi > last.1 { out[out.count - 1].1 = hi }
            } else {
                out.append((lo, hi))
            }
        }
        return out
    }

    mutating func append32(_ list: [(Key128, Key128)]) {
        for (lo, hi) in RuleChecks.merged(list) {
            bounds32.append(UInt32(truncatingIfNeeded: lo.lo))
            bounds32.append(UInt32(truncatingIfNeeded: hi.lo))
        }
        offsets32.append(Int32(bounds32.count))
    }

    mutating func append128(_ list: [(Key128, Key128)]) {
        for (lo, hi) in RuleChecks.merged(list) {
            bounds128.append(lo)
            bounds128.append(hi)
        }
        offsets128.append(Int32(bounds128.count))
    }
}

/// True when `key` is in one of the sorted, disjoint inclusive intervals `b[lo..<hi]` (pairs).
@inline(__always) func intervalsContain<K: Comparable>(_ b: UnsafeBufferPointer<K>, _ lo: Int, _ hi: Int, _ key: K) -> Bool {
    let pairs = (hi - lo) >> 1
    if pairs <= 8 {
        var k = lo
        while k < hi {
            if key < b[k] { return false }
            if key <= b[k + 1] { return true }
            k += 2
        }
        return false
    }
    var l = 0, h = pairs  // the last pair whose low bound is <= key
    while h - l > 1 {
        let mid = (l + h) >> 1
        if b[lo + 2 * mid] <= key { l = mid } else { h = mid }
    }
    return b[lo + 2 * l] <= key && key <= b[lo + 2 * l + 1]
}

/// True when sorted `list[start..<start+count]` holds `v`.
@inline(__always) func sortedContains(_ list: UnsafeBufferPointer<Int32>, _ start: Int, _ count: Int, _ v: Int32) -> Bool {
    var lo = start, hi = start + count
    while lo < hi {
        let mid = (lo + hi) >> 1
        let x = list[mid]
        if x == v { return true }
        if x < v { lo = mid + 1 } else { hi = mid }
    }
    return false
}
