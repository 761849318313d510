import Control
import Core
import Testing

/// The `reload` request and its replies on the wire (issue 15): the contract between
/// `tunnelctl reload` / `peer add|remove|disable|enable|rename` and the daemon's handler.
@Suite struct ReloadWireTests {
    @Test func requestWireForm() throws {
        let bytes = ControlWire.encode(ControlRequest.reload)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"type":"reload","version":1}"# + "\n")
        #expect(try ControlWire.decodeRequest(Array(bytes.dropLast())).get() == .reload)
    }

    @Test(arguments: [
        ReloadReply(policyGeneration: 7),
        ReloadReply(added: ["bob"], removed: ["carol", "dave"], changed: ["alice"],
                    warnings: ["tunneld.conf:4: DNS: is a client setting"], policyGeneration: 3),
    ])
    func replyRoundTrips(reply: ReloadReply) throws {
        let bytes = ControlWire.encode(ControlResponse.reload(reply))
        #expect(bytes.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(try ControlWire.decodeResponse(Array(bytes.dropLast())).get() == .reload(reply))
    }

    @Test func replyWireForm() {
        let text = String(decoding: ControlWire.encode(ControlResponse.reload(ReloadReply(added: ["bob"], policyGeneration: 2))), as: UTF8.self)
        #expect(text == #"{"reload":{"added":["bob"],"changed":[],"policyGeneration":2,"removed":[],"warnings":[]},"type":"reload","version":1}"# + "\n")
    }

    @Test func invalidConfigErrorRoundTrips() throws {
        let r = ControlResponse.failure(.invalidConfig, "tunneld.conf:9: PublicKey: missing in [Peer]")
        let bytes = ControlWire.encode(r)
        #expect(try ControlWire.decodeResponse(Array(bytes.dropLast())).get() == r)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""code":"invalidConfig""#))
    }

    @Test func isUnchanged() {
        #expect(ReloadReply(warnings: ["w"], policyGeneration: 1).isUnchanged)
        #expect(!ReloadReply(changed: ["a"], policyGeneration: 1).isUnchanged)
    }
}
