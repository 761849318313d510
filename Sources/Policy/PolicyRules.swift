import Core
import Packet

/// Rules in evaluation order, stored by column: one fixed-size record per rule and one shared
/// array per kind of list value (prefixes, ports, protocols, …), so a rule costs 64 bytes
/// plus its values, with no allocation of its own (100,000 rules were ≈ 40 MB as an
/// array of `PolicyRule`, each with its own text and arrays). A rule's text is a byte range of its
/// file's text, which the collection keeps (one copy per file, shared with the `PolicySource`).
///
/// It is a collection of `PolicyRule`: reading an element builds the value (`explain`,
/// `policy check`, the daemon's rule list); the compiler and the evaluator read the columns.
/// `PolicySet` and `CompiledPolicy` share one instance (copy-on-write arrays).
public struct PolicyRules: RandomAccessCollection, Sendable {
    /// One rule's fixed fields. List fields are the ranges `start ..< next rule's start` (sources
    /// end at `destinationStart`, source ports at `destinationPortStart`).
    struct Record: Sendable {
        var text: Int32
        var textStart: Int32
        var textCount: Int32
        var file: Int32
        var line: Int32
        var column: Int32
        /// Index in `extras` (the rule's tier, window or reason), -1 = it has none of them.
        var extra: Int32
        /// An index in `strings`, -1 = none, or -2 - k: the `nameCount` bytes at offset k of the
        /// rule's text (where the parser's rules have their name, so it costs no string).
        var name: Int32
        var peerStart: Int32
        var protocolStart: Int32
        var sourceStart: Int32
        var destinationStart: Int32
        var sourcePortStart: Int32
        var destinationPortStart: Int32
        var hostStart: Int32
        var action: Verdict
        var direction: Direction
        var nameCount: UInt8
        /// Bit 0: `from gateway`; bit 1: `to gateway` (`PolicyRule.sourceGateway`, …).
        var gateway: UInt8
    }

    var records: [Record] = []
    /// The texts rules are ranges of: whole files (parser) or a rule's own text (`append`).
    var texts: [String] = []
    var files: [String] = []
    var fileIndex: [String: Int32] = [:]
    var tiers: [PeerTier] = []
    var windows: [TimeWindow] = []
    /// Fields few rules have, apart so that the others' records stay 64 bytes. Indices in
    /// `tiers`, `windows`, `strings`; -1 = none.
    struct Extra: Sendable {
        var tier: Int32
        var window: Int32
        var reason: Int32
    }
    var extras: [Extra] = []
    /// Names and reasons.
    var strings: [String] = []
    var peerNames: [String] = []
    var peerColumns: [Int32] = []
    var protocolValues: [IPProtocol] = []
    /// Sources then destinations of each rule, 24 bytes each (an `IPPrefix` takes 32).
    var prefixes: [StoredPrefix] = []
    struct StoredPrefix: Sendable {
        var high: UInt64
        var low: UInt64
        var length: UInt8
        var isIPv6: Bool
        init(_ p: IPPrefix) {
            high = p.address.high
            low = p.address.low
            length = UInt8(p.length)
            isIPv6 = p.address.isIPv6
        }
        var prefix: IPPrefix {
            IPPrefix(isIPv6 ? IPAddress(v6High: high, low: low) : IPAddress(v4: UInt32(truncatingIfNeeded: low)), length: Int(length))!
        }
    }
    /// Source ports then destination ports of each rule.
    var ports: [PortRange] = []
    var hostPatterns: [HostPattern] = []

    /// No rules.
    public init() {}

    /// The rules of an array, in its order.
    public init(_ rules: some Sequence<PolicyRule>) {
        for r in rules { append(r) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { records.count }

    /// The rule at `i`, built from the columns.
    public subscript(i: Int) -> PolicyRule {
        var r = PolicyRule(action: action(i), location: location(i), text: text(i))
        r.direction = direction(i)
        r.peers = Array(peers(i))
        r.peerColumns = peerColumns[peerRange(i)].map { Int($0) }
        r.tier = tier(i)
        r.protocols = Array(protocols(i))
        r.sources = Array(sources(i))
        r.destinations = Array(destinations(i))
        r.sourceGateway = sourceGateway(i)
        r.destinationGateway = destinationGateway(i)
        r.sourcePorts = Array(sourcePorts(i))
        r.destinationPorts = Array(destinationPorts(i))
        r.hosts = Array(hosts(i))
        r.window = window(i)
        r.name = name(i)
        r.reason = reason(i)
        return r
    }

    /// Adds a rule with its own text.
    public mutating func append(_ rule: PolicyRule) {
        texts.append(rule.text)
        append(rule, text: Int32(texts.count - 1), start: 0, count: rule.text.utf8.count)
    }

    /// Reserves room for about `n` rules (the parser counts lines).
    mutating func reserve(_ n: Int) {
        records.reserveCapacity(n)
        protocolValues.reserveCapacity(n)
        prefixes.reserveCapacity(n)
        ports.reserveCapacity(n)
    }

    /// The index of a text the next rules take ranges of (the parser adds each file's text once).
    mutating func addText(_ text: String) -> Int32 {
        texts.append(text)
        return Int32(texts.count - 1)
    }

    /// Forgets the last text added (a file no rule came from).
    mutating func dropLastText() { texts.removeLast() }

    /// Adds `rule` (its `text` is ignored) whose text is `count` bytes at `start` of `texts[text]`.
    mutating func append(_ rule: PolicyRule, text: Int32, start: Int, count: Int) {
        let file: Int32
        if let f = fileIndex[rule.location.file] {
            file = f
        } else {
            file = Int32(files.count)
            files.append(rule.location.file)
            fileIndex[rule.location.file] = file
        }
        var tier: Int32 = -1
        if let t = rule.tier {
            if let k = tiers.firstIndex(of: t) {
                tier = Int32(k)
            } else {
                tiers.append(t)
                tier = Int32(tiers.count - 1)
            }
        }
        func string(_ s: String?) -> Int32 {
            guard let s else { return -1 }
            strings.append(s)
            return Int32(strings.count - 1)
        }
        var window: Int32 = -1
        if let w = rule.window {
            windows.append(w)
            window = Int32(windows.count - 1)
        }
        // The name as a range of the text when it is written there (any occurrence will do).
        var name: Int32 = -1, nameCount: UInt8 = 0
        if let n = rule.name {
            let found: Int?? = n.utf8.count <= 255 ? texts[Int(text)].utf8.withContiguousStorageIfAvailable { whole in
                n.utf8.withContiguousStorageIfAvailable { name -> Int? in
                    let t = UnsafeBufferPointer(rebasing: whole[start..<start + count])
                    guard !name.isEmpty, name.count <= t.count else { return nil }
                    for k in 0...(t.count - name.count) where t[k] == name[0] && UnsafeBufferPointer(rebasing: t[k..<k + name.count]).elementsEqual(name) {
                        return k
                    }
                    return nil
                } ?? nil
            } : nil
            if let k = found ?? nil {
                name = -2 - Int32(k)
                nameCount = UInt8(n.utf8.count)
            } else {
                name = string(n)
            }
        }
        let record = Record(
            text: text, textStart: Int32(start), textCount: Int32(count), file: file, line: Int32(rule.location.line),
            column: Int32(rule.location.column), extra: -1, name: name,
            peerStart: Int32(peerNames.count), protocolStart: Int32(protocolValues.count), sourceStart: Int32(prefixes.count),
            destinationStart: Int32(prefixes.count + rule.sources.count), sourcePortStart: Int32(ports.count),
            destinationPortStart: Int32(ports.count + rule.sourcePorts.count), hostStart: Int32(hostPatterns.count),
            action: rule.action, direction: rule.direction, nameCount: nameCount,
            gateway: (rule.sourceGateway ? 1 : 0) | (rule.destinationGateway ? 2 : 0))
        peerNames += rule.peers
        for k in rule.peers.indices { peerColumns.append(Int32(k < rule.peerColumns.count ? rule.peerColumns[k] : 0)) }
        protocolValues += rule.protocols
        for p in rule.sources { prefixes.append(StoredPrefix(p)) }
        for p in rule.destinations { prefixes.append(StoredPrefix(p)) }
        ports += rule.sourcePorts
        ports += rule.destinationPorts
        hostPatterns += rule.hosts
        records.append(record)
        let reason = string(rule.reason)
        if tier >= 0 || window >= 0 || reason >= 0 {
            extras.append(Extra(tier: tier, window: window, reason: reason))
            records[records.count - 1].extra = Int32(extras.count - 1)
        }
    }

    // MARK: Columns (no allocation)

    /// Where rule `i`'s values of a column end: the next rule's start there, or the column's end.
    @inline(__always) func end(_ i: Int, _ total: Int, _ start: (Record) -> Int32) -> Int {
        i + 1 < records.count ? Int(start(records[i + 1])) : total
    }
    func peerRange(_ i: Int) -> Range<Int> { Int(records[i].peerStart)..<end(i, peerNames.count) { $0.peerStart } }

    public func action(_ i: Int) -> Verdict { records[i].action }
    public func direction(_ i: Int) -> Direction { records[i].direction }
    public func peers(_ i: Int) -> ArraySlice<String> { peerNames[peerRange(i)] }
    @inline(__always) func extra(_ i: Int) -> Extra? { records[i].extra < 0 ? nil : extras[Int(records[i].extra)] }
    public func tier(_ i: Int) -> PeerTier? { extra(i).flatMap { $0.tier < 0 ? nil : tiers[Int($0.tier)] } }
    public func protocols(_ i: Int) -> ArraySlice<IPProtocol> {
        protocolValues[Int(records[i].protocolStart)..<end(i, protocolValues.count) { $0.protocolStart }]
    }
    public func sources(_ i: Int) -> some RandomAccessCollection<IPPrefix> {
        prefixes[Int(records[i].sourceStart)..<Int(records[i].destinationStart)].lazy.map(\.prefix)
    }
    public func destinations(_ i: Int) -> some RandomAccessCollection<IPPrefix> {
        prefixes[Int(records[i].destinationStart)..<end(i, prefixes.count) { $0.sourceStart }].lazy.map(\.prefix)
    }
    /// True when rule `i` says `from gateway` (its sources constrain even when empty).
    public func sourceGateway(_ i: Int) -> Bool { records[i].gateway & 1 != 0 }
    /// True when rule `i` says `to gateway`.
    public func destinationGateway(_ i: Int) -> Bool { records[i].gateway & 2 != 0 }
    /// True when some rule names `gateway` (only such a set needs binding).
    public var usesGateway: Bool { records.contains { $0.gateway != 0 } }
    public func sourcePorts(_ i: Int) -> ArraySlice<PortRange> { ports[Int(records[i].sourcePortStart)..<Int(records[i].destinationPortStart)] }
    public func destinationPorts(_ i: Int) -> ArraySlice<PortRange> {
        ports[Int(records[i].destinationPortStart)..<end(i, ports.count) { $0.sourcePortStart }]
    }
    public func hosts(_ i: Int) -> ArraySlice<HostPattern> { hostPatterns[Int(records[i].hostStart)..<end(i, hostPatterns.count) { $0.hostStart }] }
    public func hasHosts(_ i: Int) -> Bool { Int(records[i].hostStart) < end(i, hostPatterns.count) { $0.hostStart } }
    public func window(_ i: Int) -> TimeWindow? { extra(i).flatMap { $0.window < 0 ? nil : windows[Int($0.window)] } }
    public func name(_ i: Int) -> String? {
        let r = records[i]
        if r.name >= 0 { return strings[Int(r.name)] }
        if r.name == -1 { return nil }
        return slice(texts[Int(r.text)], Int(r.textStart) + Int(-2 - r.name), Int(r.nameCount))
    }
    public func reason(_ i: Int) -> String? { extra(i).flatMap { $0.reason < 0 ? nil : strings[Int($0.reason)] } }
    public func location(_ i: Int) -> SourceLocation {
        let r = records[i]
        return SourceLocation(file: files[Int(r.file)], line: Int(r.line), column: Int(r.column))
    }
    /// The rule's text as written (trimmed, without its comment).
    public func text(_ i: Int) -> String {
        let r = records[i]
        let whole = texts[Int(r.text)]
        if r.textStart == 0 && Int(r.textCount) == whole.utf8.count { return whole }
        return slice(whole, Int(r.textStart), Int(r.textCount))
    }

    /// The same rules with `hosts` added to the sources of every `from gateway` rule and to the
    /// destinations of every `to gateway` rule; texts, names and places unchanged (a rule still
    /// reads `to gateway`). Rules without the word are copied as they are.
    func bindingGateway(_ hosts: [IPPrefix]) -> PolicyRules {
        var out = PolicyRules()
        out.texts = texts
        out.files = files
        out.fileIndex = fileIndex
        out.reserve(count)
        for i in indices {
            var r = self[i]
            if r.sourceGateway {
                let added = hosts.filter { !r.sources.contains($0) }
                r.sources += added
            }
            if r.destinationGateway {
                let added = hosts.filter { !r.destinations.contains($0) }
                r.destinations += added
            }
            let rec = records[i]
            out.append(r, text: rec.text, start: Int(rec.textStart), count: Int(rec.textCount))
        }
        return out
    }

    /// `count` bytes of `s` from byte `start` (O(1) to find in a native string).
    func slice(_ s: String, _ start: Int, _ count: Int) -> String {
        let u = s.utf8
        let a = u.index(u.startIndex, offsetBy: start)
        let b = u.index(a, offsetBy: count)
        return String(decoding: u[a..<b], as: UTF8.self)
    }
}
