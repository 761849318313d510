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

/// One match dimension's classes: each class has the bitset of the rules that accept its values
/// in this dimension (for verification) and the sorted list of rules *anchored* in this dimension
/// that accept them (the candidates this dimension contributes).
struct Dimension: Sendable {
    /// Class → offset of its bitset in `CompiledPolicy.bits`.
    var bitsOffset: [Int32] = []
    /// Class → first index of its anchor list in `CompiledPolicy.anchors`.
    var anchorStart: [Int32] = []
    /// Class → length of its anchor list.
    var anchorCount: [Int32] = []
}

/// Builds per-dimension equivalence classes: the domain is cut into elementary intervals at every
/// rule boundary, and each interval gets the bitset (over rule indices) of the rules that match in
/// this dimension. Identical bitsets are stored once, in `words`, shared by all dimensions; anchor
/// lists likewise in `anchors`.
struct ClassBuilder {
    /// 64-bit words per bitset.
    let wordCount: Int
    let ruleCount: Int
    /// Every distinct bitset, back to back.
    var words: [UInt64] = []
    var interned: [[UInt64]: Int32] = [:]
    /// Every distinct anchor list, back to back.
    var anchors: [Int32] = []
    var internedLists: [[Int32]: Int32] = [:]

    init(ruleCount: Int) {
        self.ruleCount = ruleCount
        wordCount = max(1, (ruleCount + 63) / 64)
    }

    /// The offset of `bitset` in `words`, adding it when new.
    mutating func intern(_ bitset: [UInt64]) -> Int32 {
        if let o = interned[bitset] { return o }
        let o = Int32(words.count)
        words += bitset
        interned[bitset] = o
        return o
    }

    /// A mask with the rules anchored in a dimension.
    func mask(_ anchored: [Bool]) -> [UInt64] {
        var m = [UInt64](repeating: 0, count: wordCount)
        for (r, a) in anchored.enumerated() where a { m[r >> 6] |= 1 << UInt64(r & 63) }
        return m
    }

    /// The class of `bitset` in `dim` (one class per distinct bitset), adding it when new.
    mutating func classID(_ bitset: [UInt64], anchorMask: [UInt64], _ dim: inout Dimension, _ byOffset: inout [Int32: Int32]) -> Int32 {
        let o = intern(bitset)
        if let c = byOffset[o] { return c }
        var list: [Int32] = []
        for k in 0..<wordCount {
            var w = bitset[k] & anchorMask[k]
            while w != 0 {
                list.append(Int32(k << 6 | w.trailingZeroBitCount))
                w &= w - 1
            }
        }
        let start: Int32
        if let s = internedLists[list] {
            start = s
        } else {
            start = Int32(anchors.count)
            anchors += list
            internedLists[list] = start
        }
        let c = Int32(dim.bitsOffset.count)
        dim.bitsOffset.append(o)
        dim.anchorStart.append(start)
        dim.anchorCount.append(Int32(list.count))
        byOffset[o] = c
        return c
    }

    /// Partitions `[0, max]`. `intervals[r]` is nil when rule `r` matches anything in this
    /// dimension, else the inclusive intervals it matches (possibly none). Returns the sorted
    /// starts of the elementary intervals (the first is 0) and each one's class; adjacent
    /// intervals of the same class are merged.
    mutating func partition(max: Key128, intervals: [[(Key128, Key128)]?], anchored: [Bool], _ dim: inout Dimension) -> (starts: [Key128], classes: [Int32]) {
        let anchorMask = mask(anchored)
        var byOffset: [Int32: Int32] = [:]
        var base = [UInt64](repeating: 0, count: wordCount)
        var events: [(key: Key128, rule: Int32, delta: Int32)] = []
        for (r, list) in intervals.enumerated() {
            guard let list else {
                base[r >> 6] |= 1 << UInt64(r & 63)
                continue
            }
            for (lo, hi) in list {
                events.append((lo, Int32(r), 1))
                if hi < max { events.append((hi.next, Int32(r), -1)) }
            }
        }
        events.sort { $0.key < $1.key }
        var counts = [Int32](repeating: 0, count: ruleCount)
        var current = base
        var starts: [Key128] = []
        var classes: [Int32] = []
        var i = 0
        var point = Key128(0, 0)
        while true {
            while i < events.count && events[i].key == point {
                let e = events[i]
                let r = Int(e.rule)
                let before = counts[r]
                counts[r] += e.delta
                if before == 0 && counts[r] > 0 { current[r >> 6] |= 1 << UInt64(r & 63) }
                if before > 0 && counts[r] == 0 { current[r >> 6] &= ~(1 << UInt64(r & 63)) }
                i += 1
            }
            let c = classID(current, anchorMask: anchorMask, &dim, &byOffset)
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

    /// The bitset with exactly `rules` set.
    func bitset(of rules: [Int]) -> [UInt64] {
        var b = [UInt64](repeating: 0, count: wordCount)
        for r in rules { b[r >> 6] |= 1 << UInt64(r & 63) }
        return b
    }
}
