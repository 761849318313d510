import Core
import Engine
import Foundation
import Runtime
import Packet
import Store
import Testing
import TestSupport

@testable import Daemon

/// History keeps every decision as it was taken, through reloads: a whole engine with the
/// daemon's `History` writing a real store runs random reloads, packets and tier changes
/// (`DecisionScenario`); every stored flow row and flow refusal then names the rule and reason
/// the policy of its own generation gives that flow — read back after the store is reopened, as
/// after a restart.
@Suite(.serialized) struct ReloadHistoryTruthTests {
    @Test(arguments: [UInt64(11), 12]) func storedRowsNameTheirGenerationsRule(seed: UInt64) throws {
        let path = HistoryTests.tempStore()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let writer = try StoreWriter(path: path, options: .init(flushIntervalMs: 5))
        // Peer names do not matter here (rows say `peer-N`); the sweep runs every 50 ms.
        let history = History(writer: writer, clock: SystemClock(), idBase: 0, peers: .names([:]), flowUpdateIntervalMs: 50)
        let s = try DecisionScenario(seed: seed, events: history)
        let decisions = try s.run(steps: 150)
        usleep(200_000)  // a sweep or two of the timer thread
        writer.flush()
        writer.close()

        let store = try StateStore(path: path)  // reopened: what tunnelctl reads after a restart
        let flows = try store.flows()
        #expect(flows.count > 10)
        // A row keeps the decision that opened its flow; a later one that refuses it is a refusal.
        var opening: [Int64: FlowDecision] = [:]
        for d in decisions where d.opened { opening[Int64(d.entry.id)] = d }
        for f in flows {
            let d = try #require(opening[f.id], "flow \(f.id) was decided")
            let want = try #require(s.reference(generation: d.generation, proto: IPProtocol(rawValue: f.proto), source: f.src,
                                                sourcePort: f.srcPort, destination: f.dst, destinationPort: f.dstPort))
            #expect(f.decision == want.rule, "flow \(f.id) \(flowText(f))")
            #expect(f.rule == want.rule.place, "flow \(f.id) \(flowText(f))")
            #expect(f.verdict == want.action, "flow \(f.id) \(flowText(f))")
        }
        let refusals = try store.refusals(kind: .flow)
        #expect(!refusals.isEmpty)
        for r in refusals {
            let d = try #require(r.decision, "refusal \(r.flowKey) records its decision")
            let parts = r.flowKey.split(separator: " ")
            let proto = try #require(IPProtocol(name: parts[0]))
            let dst = try #require(Endpoint(String(parts[1])))
            let want = try #require(s.reference(generation: d.generation, proto: proto, source: IPAddress("10.99.0.2")!, sourcePort: 1,
                                                destination: dst.address, destinationPort: dst.port))
            #expect(d == want.rule, "refusal \(r.flowKey) generation \(d.generation)")
            #expect(r.rule == (want.rule.place ?? "default") && r.reason == want.rule.reason, "refusal \(r.flowKey)")
        }
    }

    func flowText(_ f: Flow) -> String { "\(f.proto) \(f.src):\(f.srcPort) -> \(f.dst):\(f.dstPort)" }
}
