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

/// Builds per-dimension equivalence classes: the domain is cut into elementary intervals at every
/// rule boundary, and each interval gets the bitset (over rule indices) of the rules that match in
/// this dimension. Identical bitsets are stored once, in `words`, shared by all dimensions.
struct ClassBuilder {
    /// 64-bit words per bitset.
    let wordCount: Int
    let ruleCount: Int
    /// Every distinct bitset, back to back.
    var words: [UInt64] = []
    var interned: [[UInt64]: Int32] = [:]

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

    /// Partitions `[0, max]`. `intervals[r]` is nil when rule `r` matches anything in this
    /// dimension, else the inclusive intervals it matches (possibly none). Returns the sorted
    /// starts of the elementary intervals (the first is 0) and each one's bitset offset; adjacent
    /// intervals with the same bitset are merged.
    mutating func partition(max: Key128, intervals: [[(Key128, Key128)]?]) -> (starts: [Key128], offsets: [Int32]) {
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
        var offsets: [Int32] = []
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
            let o = intern(current)
            if offsets.last != o {
                starts.append(point)
                offsets.append(o)
            }
            guard i < events.count else { break }
            point = events[i].key
        }
        return (starts, offsets)
    }

    /// `partition` expanded into a direct table for a small domain `0...max`.
    mutating func table(max: Int, intervals: [[(Key128, Key128)]?]) -> [Int32] {
        let (starts, offsets) = partition(max: Key128(max), intervals: intervals)
        var table = [Int32](repeating: 0, count: max + 1)
        for k in starts.indices {
            let lo = Int(starts[k].lo)
            let hi = k + 1 < starts.count ? Int(starts[k + 1].lo) : max + 1
            for v in lo..<hi { table[v] = offsets[k] }
        }
        return table
    }

    /// The bitset with exactly `rules` set.
    mutating func bitset(of rules: [Int]) -> Int32 {
        var b = [UInt64](repeating: 0, count: wordCount)
        for r in rules { b[r >> 6] |= 1 << UInt64(r & 63) }
        return intern(b)
    }
}
