// libFuzzer harness for the rule parser, the compiler, the evaluator and the FLOW parser.
// Built by run.sh as one module with the Packet and Policy sources (so only Core, built as a library,
// is imported).
// The input is read as rule text; when it parses cleanly it is compiled and asked about flows
// derived from the same bytes, and the compiled answer is checked against a linear scan.

import Core

let fuzzHostLists = HostListReader { path in
    path.hasSuffix("list.txt") ? .success(Array("# list\nads.example\n0.0.0.0 a.example b.example\n*.t.example\nbücher.de\nbad name\n".utf8))
        : .failure(PolicyLoadError(message: "No such file or directory"))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func policyFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    // `host @PATH` lists come from a fixed in-memory file, never from the disk.
    let set = PolicyParser.parse([PolicySource(name: "fuzz.rules", text: text), PolicySource(name: "0.rules", text: "default allow")],
                                 hostLists: fuzzHostLists)
    for d in set.diagnostics {
        precondition(d.location.line >= 1 && d.location.column >= 1, "diagnostic without a place: \(d)")
    }
    _ = try? PolicyFlow(parsing: text)
    guard !set.hasErrors, !set.rules.isEmpty else { return 0 }
    // `gateway` bound as tunneld binds it (v4 and v6), or unbound (matching no address).
    let gateway = size % 2 == 0 ? [IPAddress(v4: 0x0A63_0001), IPAddress(v6High: 0xFD99 << 48, low: 1)] : []
    let bound = gateway.isEmpty ? set : set.bindingGateway(gateway)
    let policy = CompiledPolicy(bound)
    var seed: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { seed = (seed ^ UInt64(b)) &* 0x100_0000_01b3 }
    for k in 0..<64 {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let v6 = seed & 1 == 1
        let r = set.rules[Int(seed >> 33) % set.rules.count]
        func addr(_ list: [IPPrefix]) -> IPAddress {
            if let g = gateway.first(where: { $0.isIPv6 == v6 }), k % 7 == 0 { return g }
            if let p = list.first, k % 3 != 0 { return p.address }
            return v6 ? IPAddress(v6High: seed, low: seed >> 7) : IPAddress(v4: UInt32(truncatingIfNeeded: seed >> 11))
        }
        let protos: [IPProtocol] = r.protocols.isEmpty ? [.tcp, .udp, .icmp] : r.protocols
        let q = PolicyQuery(
            direction: k % 5 == 0 ? .in : .out, proto: protos[Int(seed >> 40) % protos.count], source: addr(r.sources),
            destination: addr(r.destinations), sourcePort: r.sourcePorts.first?.lower ?? UInt16(truncatingIfNeeded: seed >> 20),
            destinationPort: r.destinationPorts.first?.upper ?? UInt16(truncatingIfNeeded: seed >> 24),
            peer: policy.peerID(named: r.peers.first ?? "nobody"), tier: k % 3 == 0 ? nil : (k % 3 == 1 ? .free : .premium),
            host: r.hosts.first.map { "x." + $0.description.replacingAll("*.", with: "") },
            minuteOfWeek: Int(seed >> 45) % PolicyClock.minutesPerWeek)
        let v = policy.evaluate(q)
        let peerName = r.peers.first
        var expected = -1
        for (i, rule) in set.rules.enumerated() where linearMatch(rule, q, peerName, gateway) {
            expected = i
            break
        }
        precondition(Int(v.ruleIndex) == expected, "compiled \(v.ruleIndex) != linear \(expected)")
        _ = policy.explain(v)
        _ = policy.minutesToNextBoundary(afterMinuteOfWeek: q.minuteOfWeek)
    }
    return 0
}

/// The linear scan over the *unbound* rules, `gateway` standing for `gateway`'s addresses.
func linearMatch(_ r: PolicyRule, _ q: PolicyQuery, _ peer: String?, _ gateway: [IPAddress]) -> Bool {
    func address(_ list: [IPPrefix], _ named: Bool, _ a: IPAddress) -> Bool {
        (list.isEmpty && !named) || list.contains { $0.contains(a) } || (named && gateway.contains(a))
    }
    if r.direction != q.direction { return false }
    if !r.peers.isEmpty && !(peer.map(r.peers.contains) ?? false) { return false }
    if let t = r.tier, q.tier != t { return false }
    if !r.protocols.isEmpty && !r.protocols.contains(q.proto) { return false }
    if !address(r.sources, r.sourceGateway, q.source) { return false }
    if !address(r.destinations, r.destinationGateway, q.destination) { return false }
    if !r.sourcePorts.isEmpty && !(q.proto.hasPorts && r.sourcePorts.contains { $0.contains(q.sourcePort) }) { return false }
    if !r.destinationPorts.isEmpty && !(q.proto.hasPorts && r.destinationPorts.contains { $0.contains(q.destinationPort) }) { return false }
    if !r.hosts.isEmpty && !(q.host.map { h in r.hosts.contains { $0.matches(h) } } ?? false) { return false }
    if let w = r.window, !w.contains(minuteOfWeek: q.minuteOfWeek) { return false }
    return true
}
