import Packet

/// A policy compiled for the data path. Evaluation is not a scan of the rules: each match dimension
/// (direction×tier×protocol, peer, source address, destination address, source port, destination
/// port, time of week, host) maps the flow's value to an equivalence class in O(1) or O(log n)
/// (direct tables for small domains, binary search over the elementary intervals of all prefixes
/// for addresses, a hash of the name and its parent domains for hosts). Each class carries a bitset
/// over rule indices: the rules that accept that value. The AND of the eight bitsets holds exactly
/// the matching rules, and its lowest set bit is the first match. The AND stops at the first
/// non-zero word, so the cost is at most `rules/64` words times eight loads, with no allocation.
///
/// Immutable after `init`, so one instance is shared freely between threads.
public final class CompiledPolicy: Sendable {
    /// The rules in evaluation order (index = `PolicyVerdict.ruleIndex`).
    public let rules: [PolicyRule]
    /// The outbound and inbound defaults.
    public let defaultOut: PolicyDefault
    public let defaultIn: PolicyDefault

    let wordCount: Int
    let bits: [UInt64]
    /// direction*768 + tier*256 + protocol → bitset offset (tier 0 = unknown, 1 free, 2 premium).
    let kindTable: [Int32]
    /// Peer id → offset; the last entry is for unknown peers.
    let peerTable: [Int32]
    let sourceV4: AddressClasses<UInt32>
    let sourceV6: AddressClasses<Key128>
    let destinationV4: AddressClasses<UInt32>
    let destinationV6: AddressClasses<Key128>
    /// Port → offset; index 65536 is "no port" (protocols other than TCP and UDP).
    let sourcePortTable: [Int32]
    let destinationPortTable: [Int32]
    /// Minute of week → offset.
    let timeTable: [Int32]
    /// Minutes of the week where the time class changes, ascending.
    let timeBoundaries: [Int]
    let hostExact: HostTable
    let hostBelow: HostTable
    let hostNone: Int32
    let hostActive: Bool
    let peerIDs: [String: PolicyPeerID]

    /// Compiles a parsed set. Call it only on a set without errors (rules with errors were dropped
    /// by the parser, so the result would not be what the files say).
    public convenience init(_ set: PolicySet) {
        self.init(rules: set.rules, defaultOut: set.defaultOut, defaultIn: set.defaultIn)
    }

    /// Compiles rules and defaults.
    public init(rules: [PolicyRule], defaultOut: PolicyDefault, defaultIn: PolicyDefault) {
        self.rules = rules
        self.defaultOut = defaultOut
        self.defaultIn = defaultIn
        var b = ClassBuilder(ruleCount: rules.count)
        wordCount = b.wordCount

        // direction × tier × protocol.
        kindTable = b.table(max: 1535, intervals: rules.map { r in
            let tiers = r.tier.map { [Int($0.rawValue)] } ?? [0, 1, 2]
            var out: [(Key128, Key128)] = []
            for t in tiers {
                let base = Int(r.direction.rawValue) * 768 + t * 256
                if r.protocols.isEmpty {
                    out.append((Key128(base), Key128(base + 255)))
                } else {
                    for p in r.protocols { out.append((Key128(base + Int(p.rawValue)), Key128(base + Int(p.rawValue)))) }
                }
            }
            return out
        })

        // Peers: interned in order of first mention; id 0 = unknown.
        var ids: [String: PolicyPeerID] = [:]
        for r in rules { for p in r.peers where ids[p] == nil { ids[p] = PolicyPeerID(rawValue: UInt32(ids.count + 1)) } }
        peerIDs = ids
        peerTable = b.table(max: ids.count, intervals: rules.map { r in
            r.peers.isEmpty ? nil : r.peers.map { let v = Key128(Int(ids[$0]!.rawValue)); return (v, v) }
        })

        func v4Intervals(_ list: [IPPrefix]) -> [(Key128, Key128)]? {
            if list.isEmpty { return nil }
            return list.filter { !$0.address.isIPv6 }.map { p in
                let lo = UInt64(p.address.v4)
                let size: UInt64 = 1 << UInt64(32 - p.length)
                return (Key128(0, lo), Key128(0, lo + size - 1))
            }
        }
        func v6Intervals(_ list: [IPPrefix]) -> [(Key128, Key128)]? {
            if list.isEmpty { return nil }
            return list.filter { $0.address.isIPv6 }.map { p in
                let a = p.address
                let hostBits = 128 - p.length
                let hiMask: UInt64 = hostBits >= 64 ? (hostBits >= 128 ? ~0 : (~0 >> UInt64(128 - hostBits))) : 0
                let loMask: UInt64 = hostBits >= 64 ? ~0 : (hostBits == 0 ? 0 : ~0 >> UInt64(64 - hostBits))
                return (Key128(a.high, a.low), Key128(a.high | hiMask, a.low | loMask))
            }
        }
        let maxV4 = Key128(0, UInt64(UInt32.max))
        let maxV6 = Key128(.max, .max)
        sourceV4 = AddressClasses(b.partition(max: maxV4, intervals: rules.map { v4Intervals($0.sources) }), v4: ())
        sourceV6 = AddressClasses(b.partition(max: maxV6, intervals: rules.map { v6Intervals($0.sources) }))
        destinationV4 = AddressClasses(b.partition(max: maxV4, intervals: rules.map { v4Intervals($0.destinations) }), v4: ())
        destinationV6 = AddressClasses(b.partition(max: maxV6, intervals: rules.map { v6Intervals($0.destinations) }))

        func portIntervals(_ list: [PortRange]) -> [(Key128, Key128)]? {
            list.isEmpty ? nil : list.map { (Key128(Int($0.lower)), Key128(Int($0.upper))) }
        }
        sourcePortTable = b.table(max: 65536, intervals: rules.map { portIntervals($0.sourcePorts) })
        destinationPortTable = b.table(max: 65536, intervals: rules.map { portIntervals($0.destinationPorts) })

        let (timeStarts, timeOffsets) = b.partition(max: Key128(PolicyClock.minutesPerWeek - 1), intervals: rules.map { r in
            r.window.map { w in w.intervals().map { (Key128($0.0), Key128($0.1 - 1)) } }
        })
        var tt = [Int32](repeating: 0, count: PolicyClock.minutesPerWeek)
        for k in timeStarts.indices {
            let hi = k + 1 < timeStarts.count ? Int(timeStarts[k + 1].lo) : PolicyClock.minutesPerWeek
            for m in Int(timeStarts[k].lo)..<hi { tt[m] = timeOffsets[k] }
        }
        timeTable = tt
        var boundaries = timeStarts.map { Int($0.lo) }
        if boundaries.first == 0 && timeOffsets.first == timeOffsets.last { boundaries.removeFirst() }
        timeBoundaries = boundaries

        // Hosts: the classes of exact names and of "strictly below a suffix".
        var byPattern: [HostPattern: [Int]] = [:]
        var wildcard: [Int] = []
        for (i, r) in rules.enumerated() {
            if r.hosts.isEmpty { wildcard.append(i) }
            for h in r.hosts { byPattern[h, default: []].append(i) }
        }
        hostActive = !byPattern.isEmpty
        hostNone = b.bitset(of: wildcard)
        func parents(_ name: String) -> [String] {
            var out: [String] = []
            var s = Substring(name)
            while let dot = s.firstIndex(of: ".") {
                s = s[s.index(after: dot)...]
                out.append(String(s))
            }
            return out
        }
        var exact: [(String, Int32)] = []
        var below: [(String, Int32)] = []
        for pattern in byPattern.keys {
            switch pattern {
            case .exact(let name):
                var set = wildcard + byPattern[pattern]!
                for p in parents(name) { set += byPattern[.subdomains(of: p)] ?? [] }
                exact.append((name, b.bitset(of: set)))
            case .subdomains(let suffix):
                var set = wildcard + byPattern[pattern]!
                for p in parents(suffix) { set += byPattern[.subdomains(of: p)] ?? [] }
                below.append((suffix, b.bitset(of: set)))
            }
        }
        hostExact = HostTable(exact)
        hostBelow = HostTable(below)
        bits = b.words
    }

    /// The id of a peer name for `PolicyQuery.peer`; `.unknown` when no rule names it.
    public func peerID(named name: String) -> PolicyPeerID { peerIDs[name] ?? .unknown }

    /// The default for `direction` as a verdict.
    @inline(__always) func defaultVerdict(_ d: PolicyDirection) -> PolicyVerdict {
        PolicyVerdict(action: d == .out ? defaultOut.action : defaultIn.action, ruleIndex: -1, direction: d)
    }

    /// Decides a flow: the first matching rule, or the default of its direction. Allocates nothing.
    public func evaluate(_ q: PolicyQuery) -> PolicyVerdict {
        let tier = Int(q.tier?.rawValue ?? 0)
        let kind = kindTable[Int(q.direction.rawValue) * 768 + tier * 256 + Int(q.proto.rawValue)]
        let peerIndex = Int(q.peer.rawValue)
        let peer = peerTable[peerIndex < peerTable.count ? peerIndex : 0]
        let src: Int32, dst: Int32
        if q.source.isIPv6 { src = sourceV6.lookup(Key128(q.source.high, q.source.low)) } else { src = sourceV4.lookup(q.source.v4) }
        if q.destination.isIPv6 {
            dst = destinationV6.lookup(Key128(q.destination.high, q.destination.low))
        } else {
            dst = destinationV4.lookup(q.destination.v4)
        }
        let ported = q.proto.hasPorts
        let sport = sourcePortTable[ported ? Int(q.sourcePort) : 65536]
        let dport = destinationPortTable[ported ? Int(q.destinationPort) : 65536]
        let m = q.minuteOfWeek
        let time = timeTable[m >= 0 && m < PolicyClock.minutesPerWeek ? m : (m % PolicyClock.minutesPerWeek + PolicyClock.minutesPerWeek) % PolicyClock.minutesPerWeek]
        let host = hostActive ? hostOffset(q.host) : hostNone
        let n = wordCount
        let found: Int = bits.withUnsafeBufferPointer { buf in
            let base = buf.baseAddress!
            let p0 = base + Int(kind), p1 = base + Int(peer), p2 = base + Int(src), p3 = base + Int(dst)
            let p4 = base + Int(sport), p5 = base + Int(dport), p6 = base + Int(time), p7 = base + Int(host)
            var w = 0
            while w < n {
                let v = p0[w] & p1[w] & p2[w] & p3[w] & p4[w] & p5[w] & p6[w] & p7[w]
                if v != 0 { return w << 6 | v.trailingZeroBitCount }
                w += 1
            }
            return -1
        }
        if found < 0 { return defaultVerdict(q.direction) }
        return PolicyVerdict(action: rules[found].action, ruleIndex: Int32(found), direction: q.direction)
    }

    /// The class offset for a host: an exact name, else the longest listed parent domain, else none.
    func hostOffset(_ host: String?) -> Int32 {
        guard let host else { return hostNone }
        let r: Int32? = host.utf8.withContiguousStorageIfAvailable { buf in
            var raw = UnsafeRawBufferPointer(buf)
            if raw.last == UInt8(ascii: ".") { raw = UnsafeRawBufferPointer(rebasing: raw.dropLast()) }
            if let o = hostExact.lookup(raw) { return o }
            var i = 1  // a name starting with '.' is not below anything for its first dot
            while i < raw.count {
                if raw[i] == UInt8(ascii: ".") {
                    if let o = hostBelow.lookup(UnsafeRawBufferPointer(rebasing: raw[(i + 1)...])) { return o }
                }
                i += 1
            }
            return hostNone
        }
        if let r { return r }
        var copy = host
        copy.makeContiguousUTF8()
        return hostOffset(copy)
    }

    /// The deciding rule (or default) of a verdict, in words.
    public func explain(_ v: PolicyVerdict) -> PolicyExplanation {
        if v.ruleIndex >= 0 && Int(v.ruleIndex) < rules.count {
            let r = rules[Int(v.ruleIndex)]
            return PolicyExplanation(action: r.action, isDefault: false, location: r.location, text: r.text, name: r.name, reason: r.reason)
        }
        let d = v.direction == .out ? defaultOut : defaultIn
        return PolicyExplanation(action: d.action, isDefault: true, location: d.location, text: d.text, name: nil, reason: nil)
    }

    /// Minutes from `minuteOfWeek` to the next moment a `during` window opens or closes
    /// (1...10080), or nil when no rule has a window. Crossing it counts as a reload.
    public func minutesToNextBoundary(afterMinuteOfWeek minuteOfWeek: Int) -> Int? {
        guard !timeBoundaries.isEmpty else { return nil }
        let week = PolicyClock.minutesPerWeek
        let m = ((minuteOfWeek % week) + week) % week
        if let next = timeBoundaries.first(where: { $0 > m }) { return next - m }
        return timeBoundaries[0] + week - m
    }

    /// The Unix time (seconds, at the start of a minute) of the next `during` boundary strictly
    /// after `epochSeconds`, for a zone `utcOffsetSeconds` east of UTC; nil when there is none.
    /// Re-ask after each boundary: a daylight-saving change moves the offset.
    public func nextBoundary(afterEpochSeconds epochSeconds: Int64, utcOffsetSeconds: Int) -> Int64? {
        let m = PolicyClock.minuteOfWeek(epochSeconds: epochSeconds, utcOffsetSeconds: utcOffsetSeconds)
        guard let delta = minutesToNextBoundary(afterMinuteOfWeek: m) else { return nil }
        let minuteStart = (epochSeconds + Int64(utcOffsetSeconds)).floorDiv(60) * 60 - Int64(utcOffsetSeconds)
        return minuteStart + Int64(delta) * 60
    }

    /// True when some rule has a `host` pattern.
    public var hasHostRules: Bool { hostActive }
}

/// Elementary address intervals with their bitset offsets, searched by binary search.
struct AddressClasses<K: Comparable & Sendable>: Sendable {
    let starts: [K]
    let offsets: [Int32]

    /// The offset of the interval holding `key`.
    @inline(__always) func lookup(_ key: K) -> Int32 {
        starts.withUnsafeBufferPointer { s in
            var lo = 0, hi = s.count  // invariant: s[lo] <= key (s[0] is the domain's minimum)
            while hi - lo > 1 {
                let mid = (lo + hi) >> 1
                if s[mid] <= key { lo = mid } else { hi = mid }
            }
            return offsets[lo]
        }
    }
}

extension AddressClasses where K == Key128 {
    init(_ p: (starts: [Key128], offsets: [Int32])) {
        starts = p.starts
        offsets = p.offsets
    }
}

extension AddressClasses where K == UInt32 {
    init(_ p: (starts: [Key128], offsets: [Int32]), v4: Void) {
        starts = p.starts.map { UInt32($0.lo) }
        offsets = p.offsets
    }
}
