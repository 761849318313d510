import Core
import Packet

/// A policy compiled for the data path; evaluation is not a scan of the rules.
///
/// Each match dimension (direction×tier×protocol, peer, source address, destination address,
/// source port, destination port, time of week, host) maps the flow's value to an equivalence class
/// in O(1) or O(log n): direct tables for small domains, binary search over the elementary
/// intervals cut by all prefixes for addresses (equivalent to a prefix trie, flatter), and a hash
/// of the name and its parent domains for hosts.
///
/// Every rule is *anchored* in one dimension where it is specific, the most selective first
/// (destination, host, source, peer, destination port, source port, time, and finally
/// direction×tier×protocol, which every rule has). A class lists, sorted, the rules anchored in
/// its dimension that accept its value. Those lists are the only candidates: a rule can match only
/// if its anchor dimension accepts the flow. Candidates are walked in rule order, each list only
/// below the best match found so far, and a candidate is verified against its own sorted, merged
/// intervals in each other dimension it constrains (`RuleChecks`; a host rule anchored elsewhere
/// through the host class's list). The result is exactly the first matching rule of a linear scan
/// (the differential test checks this), at a cost that depends on how many rules name the flow's
/// values, not on how many rules there are. Nothing is allocated.
///
/// Memory is proportional to the rules (their intervals, and how much they overlap in their
/// anchor dimension), never to rules × classes: the per-class bitsets this replaced took ≈ 25 KB
/// per rule at 60,000 CIDR+port rules. The rules themselves are the parser's columns
/// (`PolicyRules`, shared with the `PolicySet`), and compiling keeps no per-rule copy of their
/// intervals: each dimension computes them from the columns when it partitions, the rule checks
/// keep them merged.
///
/// Immutable after `init`, so one instance is shared freely between threads.
public final class CompiledPolicy: Sendable {
    /// The rules in evaluation order (index = `PolicyVerdict.ruleIndex`).
    public let rules: PolicyRules
    /// The outbound and inbound defaults.
    public let defaultOut: PolicyDefault
    public let defaultIn: PolicyDefault

    /// Every class's anchor and verify lists, back to back (`Dimension` has the offsets).
    let lists: [Int32]
    /// Each rule's own intervals, for verifying candidates.
    let checks: RuleChecks
    /// direction*(256*tierCodes) + tier*256 + protocol → class (tier 0 = a tier no rule names
    /// or none; 1... the tiers rules name, in order of first mention: `tierIDs`).
    let kindTable: [Int32]
    /// Tier name → its code in `kindTable` (any tier name is allowed: `[Tier NAME]` classes).
    let tierIDs: [PeerTier: Int]
    /// Tier codes in use: the named ones plus 0.
    let tierCodes: Int
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
    /// Minutes of the week where some rule's `during` window opens or closes, ascending.
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

    /// The dimension rule `i` is anchored in: the most selective one it constrains.
    static func anchor(_ rules: PolicyRules, _ i: Int) -> Dim {
        if !rules.destinations(i).isEmpty || rules.destinationGateway(i) { return .destination }
        if rules.hasHosts(i) { return .host }
        if !rules.sources(i).isEmpty || rules.sourceGateway(i) { return .source }
        if !rules.peers(i).isEmpty { return .peer }
        if !rules.destinationPorts(i).isEmpty { return .destinationPort }
        if !rules.sourcePorts(i).isEmpty { return .sourcePort }
        if rules.window(i) != nil { return .time }
        return .kind
    }

    /// Compiles a parsed set. Call it only on a set without errors (rules with errors were dropped
    /// by the parser, so the result would not be what the files say).
    public convenience init(_ set: PolicySet) {
        self.init(rules: set.rules, defaultOut: set.defaultOut, defaultIn: set.defaultIn)
    }

    /// Compiles rules given as values (tests, tools).
    public convenience init(rules: [PolicyRule], defaultOut: PolicyDefault, defaultIn: PolicyDefault) {
        self.init(rules: PolicyRules(rules), defaultOut: defaultOut, defaultIn: defaultIn)
    }

    /// Appends the intervals of `direction × tier × protocol` keys rule `i` accepts.
    static func kindIntervals(_ rules: PolicyRules, _ i: Int, tierIDs: [PeerTier: Int], into out: inout [(Key128, Key128)]) {
        let codes = tierIDs.count + 1
        let protocols = rules.protocols(i)
        let direction = Int(rules.direction(i).rawValue)
        func add(_ t: Int) {
            let base = direction * 256 * codes + t * 256
            if protocols.isEmpty {
                out.append((Key128(base), Key128(base + 255)))
            } else {
                for p in protocols { out.append((Key128(base + Int(p.rawValue)), Key128(base + Int(p.rawValue)))) }
            }
        }
        if let tier = rules.tier(i) { add(tierIDs[tier]!) } else { for t in 0..<codes { add(t) } }
    }

    /// Compiles rules and defaults. Each dimension's intervals are computed from the rule columns
    /// when needed (the partitions cut them, the rule checks keep them merged), never kept per rule.
    public init(rules: PolicyRules, defaultOut: PolicyDefault, defaultIn: PolicyDefault) {
        self.rules = rules
        self.defaultOut = defaultOut
        self.defaultIn = defaultIn
        let n = rules.count
        var b = ClassBuilder()
        let anchorOf = (0..<n).map { UInt8(CompiledPolicy.anchor(rules, $0).rawValue) }
        func anchored(_ d: Dim) -> (Int) -> Bool { { anchorOf[$0] == UInt8(d.rawValue) } }
        var dims = [Dimension](repeating: Dimension(), count: Dim.allCases.count)

        // Peers: interned in order of first mention; id 0 = unknown.
        var ids: [String: PolicyPeerID] = [:]
        for i in 0..<n { for p in rules.peers(i) where ids[p] == nil { ids[p] = PolicyPeerID(rawValue: UInt32(ids.count + 1)) } }
        peerIDs = ids
        var tiers: [PeerTier: Int] = [:]
        for i in 0..<n { if let t = rules.tier(i), tiers[t] == nil { tiers[t] = tiers.count + 1 } }
        tierIDs = tiers
        tierCodes = tiers.count + 1

        // `constrained`: the rule says `from|to gateway`, so even an empty list (an unbound
        // gateway) constrains the address: it then accepts none.
        func v4(_ list: some Collection<IPPrefix>, _ constrained: Bool, _ out: inout [(Key128, Key128)]) -> Bool {
            if list.isEmpty { return constrained }
            for p in list where !p.address.isIPv6 {
                let lo = UInt64(p.address.v4)
                let size: UInt64 = 1 << UInt64(32 - p.length)
                out.append((Key128(0, lo), Key128(0, lo + size - 1)))
            }
            return true
        }
        func v6(_ list: some Collection<IPPrefix>, _ constrained: Bool, _ out: inout [(Key128, Key128)]) -> Bool {
            if list.isEmpty { return constrained }
            for p in list where p.address.isIPv6 {
                let a = p.address
                let hostBits = 128 - p.length
                let hiMask: UInt64 = hostBits >= 64 ? (hostBits >= 128 ? ~0 : (~0 >> UInt64(128 - hostBits))) : 0
                let loMask: UInt64 = hostBits >= 64 ? ~0 : (hostBits == 0 ? 0 : ~0 >> UInt64(64 - hostBits))
                out.append((Key128(a.high, a.low), Key128(a.high | hiMask, a.low | loMask)))
            }
            return true
        }
        func portList(_ list: ArraySlice<PortRange>, _ out: inout [(Key128, Key128)]) -> Bool {
            if list.isEmpty { return false }
            for p in list { out.append((Key128(Int(p.lower)), Key128(Int(p.upper)))) }
            return true
        }
        // Each dimension's intervals of rule i (false: the rule accepts anything there).
        let kinds: IntervalSource = { i, out in CompiledPolicy.kindIntervals(rules, i, tierIDs: tiers, into: &out); return true }
        let peers: IntervalSource = { i, out in
            let names = rules.peers(i)
            if names.isEmpty { return false }
            for p in names { let v = Key128(Int(ids[p]!.rawValue)); out.append((v, v)) }
            return true
        }
        let src4: IntervalSource = { i, out in v4(rules.sources(i), rules.sourceGateway(i), &out) }
        let src6: IntervalSource = { i, out in v6(rules.sources(i), rules.sourceGateway(i), &out) }
        let dst4: IntervalSource = { i, out in v4(rules.destinations(i), rules.destinationGateway(i), &out) }
        let dst6: IntervalSource = { i, out in v6(rules.destinations(i), rules.destinationGateway(i), &out) }
        let sports: IntervalSource = { i, out in portList(rules.sourcePorts(i), &out) }
        let dports: IntervalSource = { i, out in portList(rules.destinationPorts(i), &out) }
        let times: IntervalSource = { i, out in
            guard let w = rules.window(i) else { return false }
            for (lo, hi) in w.intervals() { out.append((Key128(lo), Key128(hi - 1))) }
            return true
        }


        kindTable = b.table(max: 2 * 256 * (tiers.count + 1) - 1, count: n, intervals: kinds, anchored: anchored(.kind), &dims[Dim.kind.rawValue])
        peerTable = b.table(max: ids.count, count: n, intervals: peers, anchored: anchored(.peer), &dims[Dim.peer.rawValue])
        let maxV4 = Key128(0, UInt64(UInt32.max))
        let maxV6 = Key128(.max, .max)
        func v4Classes(_ intervals: IntervalSource, _ d: Dim) -> AddressClasses<UInt32> {
            var starts: [UInt32] = [], offsets: [Int32] = []
            b.partition(max: maxV4, count: n, intervals: intervals, anchored: anchored(d), &dims[d.rawValue],
                        sizeHint: { starts.reserveCapacity($0); offsets.reserveCapacity($0) }) { start, c in
                starts.append(UInt32(start.lo))
                offsets.append(c)
            }
            return AddressClasses(starts: starts, offsets: offsets)
        }
        func v6Classes(_ intervals: IntervalSource, _ d: Dim) -> AddressClasses<Key128> {
            var starts: [Key128] = [], offsets: [Int32] = []
            b.partition(max: maxV6, count: n, intervals: intervals, anchored: anchored(d), &dims[d.rawValue],
                        sizeHint: { starts.reserveCapacity($0); offsets.reserveCapacity($0) }) { start, c in
                starts.append(start)
                offsets.append(c)
            }
            return AddressClasses(starts: starts, offsets: offsets)
        }
        sourceV4 = v4Classes(src4, .source)
        sourceV6 = v6Classes(src6, .source)
        destinationV4 = v4Classes(dst4, .destination)
        destinationV6 = v6Classes(dst6, .destination)
        sourcePortTable = b.table(max: 65536, count: n, intervals: sports, anchored: anchored(.sourcePort), &dims[Dim.sourcePort.rawValue])
        destinationPortTable = b.table(max: 65536, count: n, intervals: dports, anchored: anchored(.destinationPort), &dims[Dim.destinationPort.rawValue])
        let week = PolicyClock.minutesPerWeek
        timeTable = b.table(max: week - 1, count: n, intervals: times, anchored: anchored(.time), &dims[Dim.time.rawValue])
        timeBoundaries = ClassBuilder.changePoints(max: Key128(week - 1), count: n, intervals: times).map { Int($0.lo) }

        // Hosts: the classes of exact names and of "strictly below a suffix". A class lists the
        // host-anchored rules accepting it (candidates) and the other host rules accepting it
        // (verified through the class).
        var byPattern: [HostPattern: [Int32]] = [:]
        for i in 0..<n {
            for h in rules.hosts(i) { byPattern[h, default: []].append(Int32(i)) }
        }
        hostActive = !byPattern.isEmpty
        var hostClasses: [ClassKey: Int32] = [:]
        let hostDim = Dim.host.rawValue
        let hostAnchor = UInt8(Dim.host.rawValue)
        func hostClass(_ accepting: [Int32]) -> Int32 {
            let sorted = Array(Set(accepting)).sorted()
            return b.classID(anchors: sorted.filter { anchorOf[Int($0)] == hostAnchor }, verify: sorted.filter { anchorOf[Int($0)] != hostAnchor },
                             withVerify: true, &dims[hostDim], &hostClasses)
        }
        hostNone = hostClass([])
        hostAny = hostClass((0..<n).filter { rules.hasHosts($0) }.map { Int32($0) })
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
                var set = byPattern[pattern]!
                for p in parents(name) { set += byPattern[.subdomains(of: p)] ?? [] }
                exact.append((name, hostClass(set)))
            case .subdomains(let suffix):
                var set = byPattern[pattern]!
                for p in parents(suffix) { set += byPattern[.subdomains(of: p)] ?? [] }
                below.append((suffix, hostClass(set)))
            }
        }
        hostExact = HostTable(exact)
        hostBelow = HostTable(below)
        lists = b.lists
        b = ClassBuilder()  // its interning tables are done with

        // The rule checks last: their arrays then do not sit beside the partitions' transient ones
        // (what sets the peak memory of compiling).
        var checks = RuleChecks()
        checks.mask.reserveCapacity(n)
        checks.offsets32.reserveCapacity(RuleChecks.slots32 * n + 1)
        checks.offsets128.reserveCapacity(RuleChecks.slots128 * n + 1)
        checks.bounds32.reserveCapacity(8 * n)
        var buffer: [(Key128, Key128)] = []
        // The 32-bit slots in `RuleChecks` order, with the dimension each one constrains.
        let slots32: [(IntervalSource, Dim)] = [
            (kinds, .kind), (peers, .peer), (src4, .source), (dst4, .destination), (sports, .sourcePort), (dports, .destinationPort), (times, .time),
        ]
        let slots128 = [src6, dst6]
        for i in 0..<n {
            var mask: UInt8 = 1 << UInt8(Dim.kind.rawValue)
            for (source, dim) in slots32 {
                buffer.removeAll(keepingCapacity: true)
                if source(i, &buffer) { mask |= 1 << UInt8(dim.rawValue) }
                checks.append32(buffer)
            }
            for source in slots128 {
                buffer.removeAll(keepingCapacity: true)
                _ = source(i, &buffer)
                checks.append128(buffer)
            }
            if rules.hasHosts(i) { mask |= 1 << UInt8(Dim.host.rawValue) }
            checks.mask.append(mask & ~(1 << anchorOf[i]))
        }
        self.checks = checks
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
        return PolicyVerdict(action: rules.action(found), ruleIndex: Int32(found), direction: q.direction)
    }

    /// True when learning the flow's host could still change the *action* of verdict `v` (which
    /// came from `evaluate(q)` with `q.host == nil`): some host name makes an earlier `host` rule
    /// with another action the first match. The data path holds such a flow as *pending*
    /// (docs/policy.md) until the host is known or known to be absent; every other flow is decided
    /// on its first packet, without a host, by `v` — also when earlier `host` rules with the same
    /// action could match it (`block host …` before `block proto tcp port 25`: every host gives
    /// block). Such a flow is recorded with `v`'s rule, the one `policy test` and `explain` give
    /// for that FLOW without `host` (docs/hosts.md, "Decided early").
    ///
    /// Exact for every host name: the names fall into the compiled host classes, and a class
    /// reaches a `host` rule when the rule is the first match in that class. Allocates nothing;
    /// the common cases cost one or two matches. A rule with more than `hostReachProbe` patterns,
    /// none of whose first ones it reaches, is taken to be reachable (the flow waits: safe).
    public func verdictDependsOnHost(_ q: PolicyQuery, _ v: PolicyVerdict) -> Bool {
        guard hostActive else { return false }
        let limit = v.ruleIndex < 0 ? rules.count : Int(v.ruleIndex)
        var after = -1
        while true {
            // The next rule before the deciding one that matches every other field (with some
            // host) and would act otherwise.
            let h = firstMatch(q, hostClass: hostAny, after: after, otherThan: v.action)
            guard h >= 0, h < limit else { return false }
            // Only a host rule can match here and not without a host; anything else is a bug in
            // the caller's `v`: wait rather than decide wrongly.
            guard rules.hasHosts(h) else { return true }
            if reachesByHost(h, q) { return true }
            after = h
        }
    }

    /// Patterns of one rule tried by `verdictDependsOnHost` before it assumes the rule reachable.
    static let hostReachProbe = 64

    /// True when some host name makes `host` rule `h` the first match of `q`: a name in the class
    /// of one of its patterns (the pattern's own name, or a fresh name below it) that no earlier
    /// rule matching `q` takes first.
    func reachesByHost(_ h: Int, _ q: PolicyQuery) -> Bool {
        var probed = 0
        for pattern in rules.hosts(h) {
            if probed == CompiledPolicy.hostReachProbe { return true }
            probed += 1
            if firstMatch(q, hostClass: hostClass(of: pattern)) == h { return true }
        }
        return false
    }

    /// The host class of the names `pattern` matches that no more specific pattern lists: the
    /// name itself (`exact`), or a fresh name just below the suffix (`subdomains`).
    func hostClass(of pattern: HostPattern) -> Int32 {
        func find(_ name: String, _ table: HostTable) -> Int32 {
            let hit: Int32?? = name.utf8.withContiguousStorageIfAvailable { table.lookup(UnsafeRawBufferPointer($0)) }
            if let hit { return hit ?? hostNone }
            var copy = name
            copy.makeContiguousUTF8()
            return find(copy, table)
        }
        switch pattern {
        case .exact(let name): return find(name, hostExact)
        case .subdomains(let suffix): return find(suffix, hostBelow)
        }
    }

    /// The index of the first rule matching `q` with the host dimension in class `c7`, or -1.
    /// `after` and `otherThan` narrow the search for `verdictDependsOnHost`: only rules after
    /// index `after` whose action is not `otherThan`.
    func firstMatch(_ q: PolicyQuery, hostClass c7: Int32, after: Int = -1, otherThan: Verdict? = nil) -> Int {
        let tier = q.tier.flatMap { tierIDs[$0] } ?? 0
        let peerIndex = Int(q.peer.rawValue)
        let ported = q.proto.hasPorts
        let m = q.minuteOfWeek
        let week = PolicyClock.minutesPerWeek
        let minute = m >= 0 && m < week ? m : (m % week + week) % week
        // The flow's key and class in each dimension, in `Dim` order.
        let kindKey = Int(q.direction.rawValue) * 256 * tierCodes + tier * 256 + Int(q.proto.rawValue)
        let sourcePort = ported ? Int(q.sourcePort) : 65536
        let destinationPort = ported ? Int(q.destinationPort) : 65536
        let src6 = q.source.isIPv6, dst6 = q.destination.isIPv6
        let srcKey = Key128(q.source.high, q.source.low), dstKey = Key128(q.destination.high, q.destination.low)
        let c0 = kindTable[kindKey]
        let c1 = peerTable[peerIndex < peerTable.count ? peerIndex : 0]
        let c2 = src6 ? sourceV6.lookup(srcKey) : sourceV4.lookup(q.source.v4)
        let c3 = dst6 ? destinationV6.lookup(dstKey) : destinationV4.lookup(q.destination.v4)
        let c4 = sourcePortTable[sourcePort]
        let c5 = destinationPortTable[destinationPort]
        let c6 = timeTable[minute]
        let keys32: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
            UInt32(kindKey), UInt32(peerIndex < peerTable.count ? peerIndex : 0), q.source.v4, q.destination.v4,
            UInt32(sourcePort), UInt32(destinationPort), UInt32(minute))
        let hostVerifyStart = Int(dims[Dim.host.rawValue].verifyStart[Int(c7)])
        let hostVerifyCount = Int(dims[Dim.host.rawValue].verifyCount[Int(c7)])
        return dims.withUnsafeBufferPointer { d in
            lists.withUnsafeBufferPointer { listBuf in
                checks.mask.withUnsafeBufferPointer { maskBuf in
                    checks.offsets32.withUnsafeBufferPointer { off32 in
                        checks.bounds32.withUnsafeBufferPointer { b32 in
                            checks.offsets128.withUnsafeBufferPointer { off128 in
                                checks.bounds128.withUnsafeBufferPointer { b128 in
                    /// Rule `r` accepts the flow's value of 32-bit slot `s`.
                    @inline(__always) func has32(_ r: Int, _ s: Int, _ key: UInt32) -> Bool {
                        let i = r &* RuleChecks.slots32 &+ s
                        return intervalsContain(b32, Int(off32[i]), Int(off32[i &+ 1]), key)
                    }
                    @inline(__always) func has128(_ r: Int, _ s: Int, _ key: Key128) -> Bool {
                        let i = r &* RuleChecks.slots128 &+ s
                        return intervalsContain(b128, Int(off128[i]), Int(off128[i &+ 1]), key)
                    }
                    /// Rule `r` (a candidate of its anchor dimension) accepts the flow everywhere else.
                    @inline(__always) func accepts(_ r: Int) -> Bool {
                        let mask = maskBuf[r]
                        if mask == 0 { return true }
                        if mask & 0b0000_0001 != 0 && !has32(r, 0, keys32.0) { return false }
                        if mask & 0b0010_0000 != 0 && !has32(r, 5, keys32.5) { return false }
                        if mask & 0b0000_1000 != 0 && !(dst6 ? has128(r, 1, dstKey) : has32(r, 3, keys32.3)) { return false }
                        if mask & 0b0000_0010 != 0 && !has32(r, 1, keys32.1) { return false }
                        if mask & 0b0000_0100 != 0 && !(src6 ? has128(r, 0, srcKey) : has32(r, 2, keys32.2)) { return false }
                        if mask & 0b0001_0000 != 0 && !has32(r, 4, keys32.4) { return false }
                        if mask & 0b0100_0000 != 0 && !has32(r, 6, keys32.6) { return false }
                        if mask & 0b1000_0000 != 0 && !sortedContains(listBuf, hostVerifyStart, hostVerifyCount, Int32(r)) { return false }
                        return true
                    }
                    var best = Int.max
                    @inline(__always) func scan(_ dim: Dimension, _ c: Int32) {
                        var j = Int(dim.anchorStart[Int(c)])
                        let end = j + Int(dim.anchorCount[Int(c)])
                        if after >= 0 {  // lists are sorted: start past `after`
                            var hi = end
                            while j < hi {
                                let mid = (j + hi) >> 1
                                if Int(listBuf[mid]) <= after { j = mid + 1 } else { hi = mid }
                            }
                        }
                        while j < end {
                            let r = Int(listBuf[j])
                            if r >= best { return }
                            if let skip = otherThan, rules.action(r) == skip {
                                j += 1
                                continue
                            }
                            if accepts(r) {
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
                    }
                }
            }
        }
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
            let i = Int(v.ruleIndex)
            return PolicyExplanation(action: rules.action(i), isDefault: false, location: rules.location(i), text: rules.text(i),
                                     name: rules.name(i), reason: rules.reason(i))
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

extension CompiledPolicy {
    /// The number of 32-bit words the compiled matcher holds in its lists, tables and rule
    /// checks (a 128-bit key counts 4): what grows with the rule set. Tests keep it linear.
    var storedWords: Int {
        var n = lists.count + kindTable.count + peerTable.count + sourcePortTable.count + destinationPortTable.count + timeTable.count
        n += checks.mask.count / 4 + checks.offsets32.count + checks.bounds32.count + checks.offsets128.count + 4 * checks.bounds128.count
        n += sourceV4.starts.count * 2 + destinationV4.starts.count * 2 + (sourceV6.starts.count + destinationV6.starts.count) * 5
        for d in dims { n += 4 * d.anchorStart.count }
        return n
    }
}
