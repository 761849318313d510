import Core
import Foundation
import Testing
@testable import ControlProtocol

/// `StatusReply.store` (issue 13 item 1) crosses the control socket, and an older daemon's reply
/// without it still decodes.
@Suite struct StatusReplyStoreTests {
    @Test func storeHealthRoundTripsAndIsOptional() throws {
        var drops = StoreDrops()
        drops.flows = 736
        drops[.markers] = 1
        var reply = sampleStatus
        reply.store = StoreHealth(drops: drops, unavailableSinceMs: 1_764_401_400_000, retained: 40, error: "disk full")
        let line = ControlWire.encode(ControlResponse.status(reply)).dropLast()
        #expect(try ControlWire.decodeResponse(Array(line)).get() == .status(reply))
        #expect(drops.total == 737)
        #expect(drops.sentence == "736 flow records, 1 marker dropped")
        #expect(StoreDrops().sentence == "no records dropped")

        let old = ControlWire.encode(ControlResponse.status(sampleStatus)).dropLast()
        #expect(!String(decoding: old, as: UTF8.self).contains("\"store\""))
        guard case .status(let decoded) = try ControlWire.decodeResponse(Array(old)).get() else { Issue.record("not a status"); return }
        #expect(decoded.store == nil)
    }
}
