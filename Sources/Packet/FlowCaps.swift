/// Per-peer flow caps (docs/limits.md "Flow caps"): `MaxFlows` (concurrent flows,
/// enforced by `FlowTable` per owner) and `NewFlowRate` (new flows per second, burst 2×, a
/// token bucket here), plus the coalescing of refusal reports (one per peer per second). Pure:
/// time is an argument. Peers are indexed by their handle's raw value; an uncapped peer costs
/// one array load (`isCapped`). Not thread-safe: the engine keeps it under the flow lock.
public final class FlowCaps {
    @usableFromInline struct Entry {
        @usableFromInline var maxFlows: Int
        @usableFromInline var newFlows: TokenBucket?
        @usableFromInline var refusedSinceReport: UInt64
        @usableFromInline var lastReportMs: Int64
    }

    /// Version of the peer set last applied (free for the caller's use).
    public var version: UInt64 = .max
    @usableFromInline var index: [Int32] = []
    @usableFromInline var entries: [Entry] = []

    public init() {}

    /// Sets every capped peer (peers absent, or with neither cap, are uncapped). Allocates:
    /// call when the peer set changes. A peer whose caps are unchanged keeps its bucket.
    public func configure(_ caps: [(peer: UInt32, maxFlows: Int?, newFlowsPerSecond: UInt32?)], now: UInt64) {
        var next: [Entry] = []
        var nextIndex: [Int32] = []
        for (peer, maxFlows, rate) in caps where maxFlows != nil || rate != nil {
            var e = Entry(maxFlows: maxFlows.map { max(0, $0) } ?? .max, newFlows: nil, refusedSinceReport: 0,
                          lastReportMs: .min)
            if let rate, rate > 0 {
                let fresh = TokenBucket(ratePerSecond: UInt64(rate), burst: 2 * UInt64(rate), now: now)
                if let old = entry(peer), let b = old.newFlows, b.ratePerSecond == fresh.ratePerSecond {
                    e.newFlows = b
                } else {
                    e.newFlows = fresh
                }
            } else if rate == 0 {
                e.maxFlows = 0  // NewFlowRate 0/s: no new flows at all
            }
            if let old = entry(peer) {
                e.refusedSinceReport = old.refusedSinceReport
                e.lastReportMs = old.lastReportMs
            }
            if nextIndex.count <= Int(peer) { nextIndex += Array(repeating: -1, count: Int(peer) + 1 - nextIndex.count) }
            nextIndex[Int(peer)] = Int32(next.count)
            next.append(e)
        }
        entries = next
        index = nextIndex
    }

    func entry(_ peer: UInt32) -> Entry? {
        guard Int(peer) < index.count, index[Int(peer)] >= 0 else { return nil }
        return entries[Int(index[Int(peer)])]
    }

    /// True when `peer` has some flow cap: the data path's one check per packet.
    @inlinable @inline(__always) public func isCapped(_ peer: UInt32) -> Bool {
        Int(peer) < index.count && index[Int(peer)] >= 0
    }

    /// The most concurrent flows of capped `peer` (`Int.max`: no count cap).
    @inlinable public func maxFlows(_ peer: UInt32) -> Int { entries[Int(index[Int(peer)])].maxFlows }

    /// True when capped `peer` may open a flow now (its new-flow bucket holds one); takes nothing.
    @inlinable public func mayOpen(_ peer: UInt32, now: UInt64) -> Bool {
        guard let b = entries[Int(index[Int(peer)])].newFlows else { return true }
        return b.available(now: now) >= 1
    }

    /// Capped `peer` opened a flow at `now`: takes one from its new-flow bucket.
    public func opened(_ peer: UInt32, now: UInt64) {
        let i = Int(index[Int(peer)])
        if entries[i].newFlows != nil { _ = entries[i].newFlows!.take(1, now: now) }
    }

    /// Counts a refusal of `peer`'s new flow at `nowMs`; returns how many refusals to report now
    /// (all since the last report) when at least a second passed since it, else nil. Works for
    /// uncapped peers too (a full table), which report every refusal (no entry to coalesce in).
    public func refused(_ peer: UInt32, nowMs: Int64) -> UInt64? {
        guard isCapped(peer) else { return 1 }
        let i = Int(index[Int(peer)])
        entries[i].refusedSinceReport &+= 1
        if entries[i].lastReportMs != .min && nowMs - entries[i].lastReportMs < 1000 { return nil }
        let n = entries[i].refusedSinceReport
        entries[i].refusedSinceReport = 0
        entries[i].lastReportMs = nowMs
        return n
    }

    /// Bytes of state held (entries and index), for the memory report.
    public var memoryBytes: Int { entries.capacity * MemoryLayout<Entry>.stride + index.capacity * 4 }
    /// Bytes one capped peer costs.
    public static var entryBytes: Int { MemoryLayout<Entry>.stride + 4 }
}
