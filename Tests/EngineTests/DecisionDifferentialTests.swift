import Core
import Engine
import Packet
import Testing
import TestSupport

/// Every decision the engine reports is the policy of its own generation evaluated on that flow,
/// over random interleavings of reloads, packets and tier changes (`DecisionScenario`). A
/// decision attributed to another generation's rule names the wrong place or reason and fails.
@Suite(.serialized) struct DecisionDifferentialTests {
    @Test(arguments: [UInt64(1), 2, 3]) func everyDecisionIsItsGenerationsPolicy(seed: UInt64) throws {
        let s = try DecisionScenario(seed: seed)
        let decisions = try s.run()
        // At least one per new flow and per old flow under a new generation (a refused flow that
        // left the table is decided again as a new one).
        #expect(decisions.count >= s.expected)
        #expect(Set(decisions.map(\.generation)).count > 3, "the run spans several generations")
        for d in decisions {
            let e = d.entry
            let want = try #require(s.reference(generation: d.generation, proto: e.key.proto, source: e.originator,
                                                sourcePort: e.originatorPort, destination: e.responder, destinationPort: e.responderPort),
                                    "generation \(d.generation) is one the test made")
            #expect(d.verdict.action == want.action, "\(e.key) in generation \(d.generation)")
            #expect(d.rule() == want.rule, "\(e.key) in generation \(d.generation)")
        }
    }
}
