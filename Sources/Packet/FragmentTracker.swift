import Core
/// Attributes later IP fragments (which carry no transport header) to their flow: the first
/// fragment of a datagram leaves its ports under (source, destination, identification,
/// protocol), the later ones pick them up (the RFC 791 / RFC 8200 §4.5 reassembly key).
///
/// Bounded and allocation-free after `init`: a direct-mapped table of `slots` entries, each
/// valid for `lifetime` ms (Linux `ipfrag_time`, 30 s). A colliding datagram overwrites the older
/// one. A later fragment whose first fragment was not seen (reordered, lost, overwritten,
/// expired) is *unattributable*: `resolve` returns false and counts it, and the caller drops it
/// (or lets it pass as the policy for unattributable fragments says).
///
/// Not thread-safe: one data-path thread owns it.
public final class FragmentTracker {
    struct Slot {
        var sourceHigh: UInt64 = 0, sourceLow: UInt64 = 0
        var destinationHigh: UInt64 = 0, destinationLow: UInt64 = 0
        var identification: UInt32 = 0
        var proto: UInt8 = 0
        var isIPv6 = false
        var used = false
        var sourcePort: UInt16 = 0
        var destinationPort: UInt16 = 0
        var seen: Int64 = 0
    }

    /// How long a first fragment's ports are kept (ms).
    public let lifetime: Int64
    /// Later fragments that could not be attributed.
    public private(set) var unattributable: UInt64 = 0
    /// First fragments that replaced another datagram's live entry.
    public private(set) var overwritten: UInt64 = 0

    var table: ContiguousArray<Slot>
    let mask: Int

    /// A tracker with `slots` entries (rounded up to a power of two).
    public init(slots: Int = 1024, lifetime: Int64 = 30_000) {
        var n = 1
        while n < max(slots, 1) { n <<= 1 }
        table = ContiguousArray(repeating: Slot(), count: n)
        mask = n - 1
        self.lifetime = lifetime
    }

    /// Records a first fragment's ports, or fills in a later fragment's `sourcePort` and
    /// `destinationPort` (for ICMP, the values `FlowKey` uses in their place) so that its
    /// `flowKey` is its datagram's. Returns false only for an unattributable later fragment.
    /// Non-fragments pass through untouched.
    public func resolve(_ p: inout ParsedPacket, now: Int64) -> Bool {
        guard p.fragment.isFragment else { return true }
        let i = index(p)
        if !p.fragment.isLaterFragment {
            guard p.hasTransportHeader else { return true }
            let key = p.flowKey
            let (sp, dp) = key.reversed ? (key.key.portB, key.key.portA) : (key.key.portA, key.key.portB)
            if table[i].used && !matches(table[i], p) && now &- table[i].seen < lifetime { overwritten &+= 1 }
            table[i] = Slot(
                sourceHigh: p.source.high, sourceLow: p.source.low, destinationHigh: p.destination.high,
                destinationLow: p.destination.low, identification: p.fragment.identification, proto: p.proto.rawValue,
                isIPv6: p.source.isIPv6, used: true, sourcePort: sp, destinationPort: dp, seen: now)
            return true
        }
        let s = table[i]
        guard s.used, matches(s, p), now &- s.seen < lifetime else {
            unattributable &+= 1
            return false
        }
        p.sourcePort = s.sourcePort
        p.destinationPort = s.destinationPort
        return true
    }

    func matches(_ s: Slot, _ p: ParsedPacket) -> Bool {
        s.identification == p.fragment.identification && s.sourceLow == p.source.low
            && s.destinationLow == p.destination.low && s.sourceHigh == p.source.high
            && s.destinationHigh == p.destination.high && s.proto == p.proto.rawValue && s.isIPv6 == p.source.isIPv6
    }

    func index(_ p: ParsedPacket) -> Int {
        var h = UInt64(p.fragment.identification) << 8 | UInt64(p.proto.rawValue)
        h = FlowKey.mix(h ^ p.source.low)
        h = FlowKey.mix(h ^ p.source.high)
        h = FlowKey.mix(h ^ p.destination.low)
        h = FlowKey.mix(h ^ p.destination.high)
        return Int(truncatingIfNeeded: h) & mask
    }
}
