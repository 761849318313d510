import ControlProtocol
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
        ReloadReply(changes: [PeerChange(peer: "bob", kind: .disabled),
                              PeerChange(peer: "alice", kind: .tier, from: "free", to: "trial")], policyGeneration: 4),
        ReloadReply(added: ["carol"], policyGeneration: 5, policyErrors: ["/etc/tunnelvision/policies/30-x.rules:2:1: unknown word 'alow'"]),
    ])
    func replyRoundTrips(reply: ReloadReply) throws {
        let bytes = ControlWire.encode(ControlResponse.reload(reply))
        #expect(bytes.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(try ControlWire.decodeResponse(Array(bytes.dropLast())).get() == .reload(reply))
    }

    @Test func replyWireForm() {
        let text = String(decoding: ControlWire.encode(ControlResponse.reload(ReloadReply(added: ["bob"], policyGeneration: 2))), as: UTF8.self)
        #expect(text == #"{"reload":{"added":["bob"],"changed":[],"changes":[],"policyErrors":[],"policyGeneration":2,"removed":[],"warnings":[]},"type":"reload","version":1}"# + "\n")
        let disabled = ReloadReply(changes: [PeerChange(peer: "bob", kind: .disabled)], policyGeneration: 3)
        #expect(String(decoding: ControlWire.encode(ControlResponse.reload(disabled)), as: UTF8.self)
            == #"{"reload":{"added":[],"changed":["bob"],"changes":[{"kind":"disabled","peer":"bob"}],"policyErrors":[],"policyGeneration":3,"removed":[],"warnings":[]},"type":"reload","version":1}"# + "\n")
    }

    /// A reply of a tunneld that names changed peers only (no `changes`) still decodes, and its
    /// text names them.
    @Test func anOlderReplyWithoutChangesDecodes() throws {
        let old = #"{"reload":{"added":[],"changed":["alice"],"policyGeneration":2,"removed":[],"warnings":[]},"type":"reload","version":1}"#
        guard case .reload(let r) = try ControlWire.decodeResponse(Array(old.utf8)).get() else { Issue.record("not a reload"); return }
        #expect(r.changed == ["alice"] && r.changes.isEmpty && r.peerText == "changed alice")
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
