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

/// Builds per-dimension equivalence classes: the domain is cut into elementary intervals where
/// the set of rules *anchored* in the dimension that accept a value changes, and each distinct set
/// is one class. Identical lists are stored once, in `lists`, shared by all dimensions.
struct ClassBuilder {
    /// Every distinct rule list, back to back.
    var lists: [Int32] = []
    var internedLists: [[Int32]: Int32] = [:]

    /// The offset of `list` in `lists`, adding it when new.
    mutating func intern(_ list: [Int32]) -> Int32 {
        if list.isEmpty { return 0 }
        if let s = internedLists[list] { return s }
        let s = Int32(lists.count)
        lists += list
        internedLists[list] = s
        return s
    }

    /// The class of (`anchors`, `verify`) in `dim`, one per distinct pair, added when new.
    mutating func classID(anchors: [Int32], verify: [Int32] = [], _ dim: inout Dimension, _ known: inout [[Int32]: Int32]) -> Int32 {
        let key = verify.isEmpty ? anchors : anchors + [-1] + verify
        if let c = known[key] { return c }
        let c = Int32(dim.anchorStart.count)
        dim.anchorStart.append(intern(anchors))
        dim.anchorCount.append(Int32(anchors.count))
        dim.verifyStart.append(intern(verify))
        dim.verifyCount.append(Int32(verify.count))
        known[key] = c
        return c
    }

    /// Partitions `[0, max]`. `intervals[r]` is nil when rule `r` matches anything in this
    /// dimension, else the inclusive intervals it matches (possibly none); only rules with
    /// `anchored[r]` take part. Returns the sorted starts of the elementary intervals (the first is
    /// 0) and each one's class; adjacent intervals of the same class are merged.
    mutating func partition(max: Key128, intervals: [[(Key128, Key128)]?], anchored: [Bool], _ dim: inout Dimension) -> (starts: [Key128], classes: [Int32]) {
        var known: [[Int32]: Int32] = [:]
        var events: [(key: Key128, rule: Int32, delta: Int32)] = []
        for (r, list) in intervals.enumerated() where anchored[r] {
            for (lo, hi) in list ?? [(Key128(0, 0), max)] {
                events.append((lo, Int32(r), 1))
                if hi < max { events.append((hi.next, Int32(r), -1)) }
            }
        }
        events.sort { $0.key < $1.key }
        var counts: [Int32: Int32] = [:]
        var active: [Int32] = []  // sorted: the anchored rules accepting the current point
        var starts: [Key128] = []
        var classes: [Int32] = []
        var i = 0
        var point = Key128(0, 0)
        while true {
            while i < events.count && events[i].key == point {
                let e = events[i]
                let before = counts[e.rule, default: 0]
                let after = before + e.delta
                counts[e.rule] = after == 0 ? nil : after
                if before == 0 && after > 0 { active.insert(e.rule, at: ClassBuilder.lowerBound(active, e.rule)) }
                if before > 0 && after == 0 { active.remove(at: ClassBuilder.lowerBound(active, e.rule)) }
                i += 1
            }
            let c = classID(anchors: active, &dim, &known)
            if classes.last != c {
                starts.append(point)
                classes.append(c)
            }
            guard i < events.count else { break }
            point = events[i].key
        }
        return (starts, classes)
    }

    /// `partition` expanded into a direct table (value → class) for a small domain `0...max`.
    mutating func table(max: Int, intervals: [[(Key128, Key128)]?], anchored: [Bool], _ dim: inout Dimension) -> [Int32] {
        let (starts, classes) = partition(max: Key128(max), intervals: intervals, anchored: anchored, &dim)
        var table = [Int32](repeating: 0, count: max + 1)
        for k in starts.indices {
            let lo = Int(starts[k].lo)
            let hi = k + 1 < starts.count ? Int(starts[k + 1].lo) : max + 1
            for v in lo..<hi { table[v] = classes[k] }
        }
        return table
    }

    /// The points of `[0, max]` where the set of rules accepting a value changes, ascending, for
    /// every rule that constrains the dimension (not only the anchored ones); 0 is included
    /// unless the set at 0 is the set at `max` (a domain that wraps, like the week).
    static func changePoints(max: Key128, intervals: [[(Key128, Key128)]?]) -> [Key128] {
        var events: [(key: Key128, rule: Int32, delta: Int32)] = []
        var wraps = true
        for (r, list) in intervals.enumerated() {
            guard let list else { continue }
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

    mutating func append32(_ list: [(Key128, Key128)]?) {
        for (lo, hi) in RuleChecks.merged(list ?? []) {
            bounds32.append(UInt32(truncatingIfNeeded: lo.lo))
            bounds32.append(UInt32(truncatingIfNeeded: hi.lo))
        }
        offsets32.append(Int32(bounds32.count))
    }

    mutating func append128(_ list: [(Key128, Key128)]?) {
        for (lo, hi) in RuleChecks.merged(list ?? []) {
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
