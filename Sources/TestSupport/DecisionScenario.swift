import Core
import Engine
import Glibc
import Packet
import Policy
import Synchronization

/// A random interleaving of policy reloads (rules inserted before others, removed, reasons
/// changed, line numbers shifted), packets of new and old flows and tier changes, run through a
/// whole engine (`EngineHarness`), with what it takes to check every decision it reports
/// against the policy of the decision's own generation (`reference(for:)`: that generation's
/// text compiled again and evaluated, as `policy test` does on a saved copy of the files).
public final class DecisionScenario: @unchecked Sendable {
    // Safe: the test's thread runs `run` and reads the results after it; the recorder's list is
    // behind a Mutex (the engine's threads append to it).

    /// Forwards every hook to `also` and keeps the decisions as reported.
    public final class Recorder: GatewayEvents {
        public let decisions = Mutex<[FlowDecision]>([])
        let also: (any GatewayEvents)?
        init(also: (any GatewayEvents)?) { self.also = also }
        public func flowDecided(_ decision: FlowDecision) {
            decisions.withLock { $0.append(decision) }
            also?.flowDecided(decision)
        }
        public func flowEnded(_ record: FlowRecord) { also?.flowEnded(record) }
        public func timerTick(flows: FlowTable, monoMs: Int64) { also?.timerTick(flows: flows, monoMs: monoMs) }
        public func engineStopping(flows: FlowTable, monoMs: Int64) { also?.engineStopping(flows: flows, monoMs: monoMs) }
        var count: Int { decisions.withLock { $0.count } }
    }

    /// Rule lines a generation picks from; `#` becomes the generation's tag, so every
    /// generation's names and reasons are its own.
    static let candidates = [
        "block proto tcp port 25 name smtp-# reason \"no mail #\"",
        "allow proto udp port 53 name dns-#",
        "reject tier free proto udp port 6881-6889 reason \"torrent #\"",
        "block to 198.19.0.0/16 port 8000-8100 name lab-#",
        "allow proto tcp port 80,443 name web-#",
        "block peer alice proto udp port 5000 reason \"alice udp #\"",
        "allow tier premium reason \"premium #\"",
        "reject proto tcp port 7000-7999 reason \"range #\"",
        "block proto udp port 9000-9100 name high-#",
    ]

    /// The destinations alice's flows go to.
    static let flows: [(proto: IPProtocol, port: UInt16, dst: String)] = [
        (.tcp, 25, "203.0.113.25"), (.udp, 53, "198.18.0.53"), (.udp, 6881, "203.0.113.9"), (.tcp, 8080, "198.19.4.4"),
        (.tcp, 443, "203.0.113.7"), (.udp, 5000, "203.0.113.5"), (.tcp, 7500, "203.0.113.75"), (.udp, 9050, "203.0.113.90"),
        (.tcp, 22, "203.0.113.22"),
    ]

    public let harness: EngineHarness
    public let recorder: Recorder
    /// Generation → the rule text and alice's tier the test gave it.
    public private(set) var generations: [UInt64: (text: String, tier: PeerTier)] = [:]
    /// Decisions the model expects at least (new flows, old flows under a new generation).
    public private(set) var expected = 0
    private var rng: SplitMix

    /// A harness whose events go to the recorder and then to `events` (e.g. the daemon's `History`).
    public init(seed: UInt64, events: (any GatewayEvents)? = nil) throws {
        rng = SplitMix(0xDEC1_5100 &+ seed)
        let recorder = Recorder(also: events)
        self.recorder = recorder
        let first = DecisionScenario.policyText(tag: "g1", &rng)
        harness = try EngineHarness(rules: first) { $0.events = recorder }
        generations[harness.engine.policy.generation] = (first, .free)
    }

    static func policyText(tag: String, _ rng: inout SplitMix) -> String {
        var lines: [String] = []
        for _ in 0..<Int(rng.next() % 3) { lines.append("# filler") }
        lines.append(rng.next() % 2 == 0 ? "default allow" : "default block")
        lines.append("default in block")
        for c in candidates.shuffled(using: &rng) where rng.next() % 3 != 0 {
            lines.append(c.replacingAll("#", with: tag))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Runs `steps` random steps after a handshake; returns the decisions reported.
    public func run(steps: Int = 120) throws -> [FlowDecision] {
        let h = harness
        try h.handshake()
        guard h.engine.peer(named: "alice") != nil else { throw HarnessError("no alice") }
        var text = generations.values.first!.text
        var tier = PeerTier.free
        var sport: UInt16 = 20_000
        var decidedAt: [Int: (gen: UInt64, sport: UInt16)] = [:]
        for step in 0..<steps {
            let r = rng.next() % 10
            if r == 0 {
                text = DecisionScenario.policyText(tag: "g\(step + 2)", &rng)
                let set = PolicyParser.parse(text)
                guard !set.hasErrors else { throw HarnessError("rules: \(set.diagnostics)") }
                generations[h.engine.install(policy: (set, CompiledPolicy(set)))] = (text, tier)
            } else if r == 1 {
                tier = tier == .free ? .premium : .free
                h.engine.registry.setOverride("alice", PeerTierOverride(tier: tier, origin: .admin, since: 0))
                generations[h.engine.policy.generation] = (text, tier)
            } else {
                let i = Int(rng.next() % UInt64(DecisionScenario.flows.count))
                let f = DecisionScenario.flows[i]
                let reuse = decidedAt[i] != nil && rng.next() % 2 == 0
                let port: UInt16
                if reuse, let d = decidedAt[i] { port = d.sport } else { sport &+= 1; port = sport }
                let packet = f.proto == .tcp ? TestPackets.tcpSYN(from: "10.99.0.2", port, to: f.dst, f.port)
                    : TestPackets.udp(from: "10.99.0.2", port, to: f.dst, f.port)
                let gen = h.engine.policy.generation
                let wantsDecision = !(reuse && decidedAt[i]?.gen == gen)
                let before = recorder.count
                try h.sendPacket(packet)
                if wantsDecision {
                    expected += 1
                    var waited = 0
                    while recorder.count == before && waited < 2_000 { usleep(1_000); waited += 1 }
                }
                decidedAt[i] = (gen, port)
            }
        }
        return recorder.decisions.withLock { $0 }
    }

    /// What the policy of `generation` (compiled again from its text) decides for alice's flow
    /// `proto src:sport -> dst:dport`, in words; nil for a generation the scenario did not make.
    public func reference(generation: UInt64, proto: IPProtocol, source: IPAddress, sourcePort: UInt16, destination: IPAddress,
                          destinationPort: UInt16) -> (action: Verdict, rule: DecidedRule)? {
        guard let made = generations[generation] else { return nil }
        let compiled = CompiledPolicy(PolicyParser.parse(made.text))
        let v = compiled.evaluate(PolicyQuery(direction: .out, proto: proto, source: source, destination: destination,
                                              sourcePort: sourcePort, destinationPort: destinationPort,
                                              peer: compiled.peerID(named: "alice"), tier: made.tier))
        let why = compiled.explain(v)
        let rule = why.isDefault
            ? DecidedRule(generation: generation, place: nil, name: nil, reason: DecidedRule.defaultReason(v.action), tier: made.tier.rawValue)
            : DecidedRule(generation: generation, place: why.location.map { "\($0.file):\($0.line)" }, name: why.name,
                          reason: DecidedRule.reasonText(reason: why.reason, name: why.name, text: why.text), tier: made.tier.rawValue)
        return (v.action, rule)
    }
}
