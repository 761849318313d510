import Core
import Packet

/// A policy compiled for the data path; evaluation is not a scan of the rules.
///
/// Each match dimension (direction×tier×protocol, peer, source address, destination address,
/// source port, destination port, time of week, host) maps the flow's value to an equivalence class
/// in O(1) or O(log n): direct tables for small domains, binary search over the elementary
/// intervals cut by all prefixes for addresses (equivalent to a prefix trie, flatter), and a hash
/// of the name and its parent domains for hosts. A class carries the bitset (over rule indices) of
/// the rules that accept that value in that dimension.
///
/// Every rule is *anchored* in one dimension where it is specific, the most selective first
/// (destination, host, source, peer, destination port, source port, time, and finally
/// direction×tier×protocol, which every rule has). A class also lists, sorted, the rules anchored in
/// its dimension that accept its value. Those lists are the only candidates: a rule can match only
/// if its anchor dimension accepts the flow. Candidates are walked in rule order, each list only
/// below the best match found so far, and a candidate is verified with one bit test per
/// dimension. The result is exactly the first matching rule of a linear scan (the differential
/// test checks this), at a cost that depends on how many rules name the flow's values, not on how
/// many rules there are. Nothing is allocated.
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
    let anchors: [Int32]
    /// direction*768 + tier*256 + protocol → class (tier 0 = unknown, 1 free, 2 premium).
    let kindTable: [Int32]
    /// Peer id → class; id 0 is every peer no rule names.
    let peerTable: [Int32]
    let sourceV4: AddressClasses<UInt32>
    let sourceV6: AddressClasses<Key128>
    let destinationV4: AddressClasses<UInt32>
    let destinationV6: AddressClasses<Key128>
    /// Port → class; index 65536 is "no port" (protocols other than TCP and UDP).
    let sourcePortTable: [Int32]
    let destinationPortTable: [Int32]
    /// Minute of week → class.
    let timeTable: [Int32]
    /// Minutes of the week where the time class changes, ascending.
    let timeBoundaries: [Int]
    let hostExact: HostTable
    let hostBelow: HostTable
    let hostNone: Int32
    /// The host class of "any host at all": every rule accepts it (see `verdictDependsOnHost`).
    let hostAny: Int32
    let hostActive: Bool
    let peerIDs: [String: PolicyPeerID]
    /// kind, peer, source, destination, source port, destination port, time, host.
    let dims: [Dimension]

    /// Dimension numbers, in `dims` order.
    enum Dim: Int, CaseIterable { case kind, peer, source, destination, sourcePort, destinationPort, time, host }

    /// The dimension a rule is anchored in: the most selective one it constrains.
    static func anchor(_ r: PolicyRule) -> Dim {
        if !r.destinations.isEmpty { return .destination }
        if !r.hosts.isEmpty { return .host }
        if !r.sources.isEmpty { return .source }
        if !r.peers.isEmpty { return .peer }
        if !r.destinationPorts.isEmpty { return .destinationPort }
        if !r.sourcePorts.isEmpty { return .sourcePort }
        if r.window != nil { return .time }
        return .kind
    }

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
        let anchorOf = rules.map(CompiledPolicy.anchor)
        func anchored(_ d: Dim) -> [Bool] { anchorOf.map { $0 == d } }
        var dims = [Dimension](repeating: Dimension(), count: Dim.allCases.count)

        // direction × tier × protocol.
        kindTable = b.table(max: 1535, intervals: rules.map { r in
            let tiers = r.tier.map { [Int($0.code)] } ?? [0, 1, 2]
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
        }, anchored: anchored(.kind), &dims[Dim.kind.rawValue])

        // Peers: interned in order of first mention; id 0 = unknown.
        var ids: [String: PolicyPeerID] = [:]
        for r in rules { for p in r.peers where ids[p] == nil { ids[p] = PolicyPeerID(rawValue: UInt32(ids.count + 1)) } }
        peerIDs = ids
        peerTable = b.table(max: ids.count, intervals: rules.map { r in
            r.peers.isEmpty ? nil : r.peers.map { let v = Key128(Int(ids[$0]!.rawValue)); return (v, v) }
        }, anchored: anchored(.peer), &dims[Dim.peer.rawValue])

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
        let src = Dim.source.rawValue, dst = Dim.destination.rawValue
        sourceV4 = AddressClasses(b.partition(max: maxV4, intervals: rules.map { v4Intervals($0.sources) }, anchored: anchored(.source), &dims[src]), v4: ())
        sourceV6 = AddressClasses(b.partition(max: maxV6, intervals: rules.map { v6Intervals($0.sources) }, anchored: anchored(.source), &dims[src]))
        destinationV4 = AddressClasses(
            b.partition(max: maxV4, intervals: rules.map { v4Intervals($0.destinations) }, anchored: anchored(.destination), &dims[dst]), v4: ())
        destinationV6 = AddressClasses(
            b.partition(max: maxV6, intervals: rules.map { v6Intervals($0.destinations) }, anchored: anchored(.destination), &dims[dst]))

        func portIntervals(_ list: [PortRange]) -> [(Key128, Key128)]? {
            list.isEmpty ? nil : list.map { (Key128(Int($0.lower)), Key128(Int($0.upper))) }
        }
        sourcePortTable = b.table(max: 65536, intervals: rules.map { portIntervals($0.sourcePorts) },
            anchored: anchored(.sourcePort), &dims[Dim.sourcePort.rawValue])
        destinationPortTable = b.table(max: 65536, intervals: rules.map { portIntervals($0.destinationPorts) },
            anchored: anchored(.destinationPort), &dims[Dim.destinationPort.rawValue])

        let (timeStarts, timeClasses) = b.partition(max: Key128(PolicyClock.minutesPerWeek - 1), intervals: rules.map { r in
            r.window.map { w in w.intervals().map { (Key128($0.0), Key128($0.1 - 1)) } }
        }, anchored: anchored(.time), &dims[Dim.time.rawValue])
        var tt = [Int32](repeating: 0, count: PolicyClock.minutesPerWeek)
        for k in timeStarts.indices {
            let hi = k + 1 < timeStarts.count ? Int(timeStarts[k + 1].lo) : PolicyClock.minutesPerWeek
            for m in Int(timeStarts[k].lo)..<hi { tt[m] = timeClasses[k] }
        }
        timeTable = tt
        var boundaries = timeStarts.map { Int($0.lo) }
        if boundaries.first == 0 && timeClasses.first == timeClasses.last { boundaries.removeFirst() }
        timeBoundaries = boundaries

        // Hosts: the classes of exact names and of "strictly below a suffix".
        var byPattern: [HostPattern: [Int]] = [:]
        var wildcard: [Int] = []
        for (i, r) in rules.enumerated() {
            if r.hosts.isEmpty { wildcard.append(i) }
            for h in r.hosts { byPattern[h, default: []].append(i) }
        }
        hostActive = !byPattern.isEmpty
        let hostMask = b.mask(anchored(.host))
        var hostClasses: [Int32: Int32] = [:]
        hostNone = b.classID(b.bitset(of: wildcard), anchorMask: hostMask, &dims[Dim.host.rawValue], &hostClasses)
        hostAny = b.classID(b.bitset(of: Array(rules.indices)), anchorMask: hostMask, &dims[Dim.host.rawValue], &hostClasses)
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
                exact.append((name, b.classID(b.bitset(of: set), anchorMask: hostMask, &dims[Dim.host.rawValue], &hostClasses)))
            case .subdomains(let suffix):
                var set = wildcard + byPattern[pattern]!
                for p in parents(suffix) { set += byPattern[.subdomains(of: p)] ?? [] }
                below.append((suffix, b.classID(b.bitset(of: set), anchorMask: hostMask, &dims[Dim.host.rawValue], &hostClasses)))
            }
        }
        hostExact = HostTable(exact)
        hostBelow = HostTable(below)
        bits = b.words
        anchors = b.anchors
        self.dims = dims
    }

    /// The id of a peer name for `PolicyQuery.peer`; `.unknown` when no rule names it.
    public func peerID(named name: String) -> PolicyPeerID { peerIDs[name] ?? .unknown }

    /// The default for `direction` as a verdict.
    @inline(__always) func defaultVerdict(_ d: Direction) -> PolicyVerdict {
        PolicyVerdict(action: d == .out ? defaultOut.action : defaultIn.action, ruleIndex: -1, direction: d)
    }

    /// Decides a flow: the first matching rule, or the default of its direction. Allocates nothing.
    public func evaluate(_ q: PolicyQuery) -> PolicyVerdict {
        let found = firstMatch(q, hostClass: hostActive ? hostOffset(q.host) : hostNone)
        if found < 0 { return defaultVerdict(q.direction) }
        return PolicyVerdict(action: rules[found].action, ruleIndex: Int32(found), direction: q.direction)
    }

    /// True when learning the flow's host could still change verdict `v` (which came from
    /// `evaluate(q)` with `q.host == nil`): some `host` rule before the deciding rule matches every
    /// other field. The data path holds such a flow as *pending* (DESIGN.md §5) until the host is
    /// known or known to be absent. Allocates nothing.
    public func verdictDependsOnHost(_ q: PolicyQuery, _ v: PolicyVerdict) -> Bool {
        guard hostActive else { return false }
        let any = firstMatch(q, hostClass: hostAny)
        return any >= 0 && (v.ruleIndex < 0 || any < Int(v.ruleIndex)) && !rules[any].hosts.isEmpty
    }

    /// The index of the first rule matching `q` with the host dimension in class `c7`, or -1.
    func firstMatch(_ q: PolicyQuery, hostClass c7: Int32) -> Int {
        let tier = Int(q.tier?.code ?? 0)
        let peerIndex = Int(q.peer.rawValue)
        let ported = q.proto.hasPorts
        let m = q.minuteOfWeek
        let week = PolicyClock.minutesPerWeek
        // The flow's class in each dimension, in `Dim` order.
        let c0 = kindTable[Int(q.direction.rawValue) * 768 + tier * 256 + Int(q.proto.rawValue)]
        let c1 = peerTable[peerIndex < peerTable.count ? peerIndex : 0]
        let c2 = q.source.isIPv6 ? sourceV6.lookup(Key128(q.source.high, q.source.low)) : sourceV4.lookup(q.source.v4)
        let c3 = q.destination.isIPv6
            ? destinationV6.lookup(Key128(q.destination.high, q.destination.low)) : destinationV4.lookup(q.destination.v4)
        let c4 = sourcePortTable[ported ? Int(q.sourcePort) : 65536]
        let c5 = destinationPortTable[ported ? Int(q.destinationPort) : 65536]
        let c6 = timeTable[m >= 0 && m < week ? m : (m % week + week) % week]
        let found: Int = dims.withUnsafeBufferPointer { d in
            bits.withUnsafeBufferPointer { bitsBuf in
                anchors.withUnsafeBufferPointer { anchorBuf in
                    let base = bitsBuf.baseAddress!
                    let p0 = base + Int(d[0].bitsOffset[Int(c0)]), p1 = base + Int(d[1].bitsOffset[Int(c1)])
                    let p2 = base + Int(d[2].bitsOffset[Int(c2)]), p3 = base + Int(d[3].bitsOffset[Int(c3)])
                    let p4 = base + Int(d[4].bitsOffset[Int(c4)]), p5 = base + Int(d[5].bitsOffset[Int(c5)])
                    let p6 = base + Int(d[6].bitsOffset[Int(c6)]), p7 = base + Int(d[7].bitsOffset[Int(c7)])
                    var best = Int.max
                    @inline(__always) func scan(_ dim: Dimension, _ c: Int32) {
                        var j = Int(dim.anchorStart[Int(c)])
                        let end = j + Int(dim.anchorCount[Int(c)])
                        while j < end {
                            let r = Int(anchorBuf[j])
                            if r >= best { return }
                            let w = r >> 6
                            let v = p0[w] & p1[w] & p2[w] & p3[w] & p4[w] & p5[w] & p6[w] & p7[w]
                            if v & (1 << UInt64(r & 63)) != 0 {
                                best = r
                                return
                            }
                            j += 1
                        }
                    }
                    scan(d[3], c3)
                    scan(d[7], c7)
                    scan(d[2], c2)
                    scan(d[1], c1)
                    scan(d[5], c5)
                    scan(d[4], c4)
                    scan(d[6], c6)
                    scan(d[0], c0)
                    return best == Int.max ? -1 : best
                }
            }
        }
        return found
    }

    /// The host class: an exact name, else the longest listed parent domain, else none.
    func hostOffset(_ host: String?) -> Int32 {
        guard let host else { return hostNone }
        let r: Int32? = host.utf8.withContiguousStorageIfAvailable { buf in hostOffset(bytes: UnsafeRawBufferPointer(buf)) }
        if let r { return r }
        var copy = host
        copy.makeContiguousUTF8()
        return hostOffset(copy)
    }

    /// The host class of a name given as bytes (ASCII case folded by the tables).
    func hostOffset(bytes host: UnsafeRawBufferPointer) -> Int32 {
        var raw = host
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

/// Elementary address intervals with their classes, searched by binary search.
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
    init(_ p: (starts: [Key128], classes: [Int32])) {
        starts = p.starts
        offsets = p.classes
    }
}

extension AddressClasses where K == UInt32 {
    init(_ p: (starts: [Key128], classes: [Int32]), v4: Void) {
        starts = p.starts.map { UInt32($0.lo) }
        offsets = p.classes
    }
}
