import Core
import Foundation
import Testing
@testable import ControlProtocol

let sampleStatus = StatusReply(
    pid: 4242, startedAtMs: 1_764_400_000_000, uptimeSeconds: 3600, version: "0.1.0", interface: "tv0", listenPort: 51820,
    addresses: ["10.99.0.1/24", "fd99::1/64"], peersConfigured: 3, peersConnected: 1, flowsActive: 17,
    drops: ["not-allowed-ip": 2, "policy-block": 5], storeQueueDrops: 0,
    policy: PolicySummary(generation: 4, files: ["policies/10-base.rules"], ruleCount: 6, loadedAtMs: 1_764_400_100_000))

let sampleResponses: [ControlResponse] = [
    .status(sampleStatus),
    .peers([
        PeerStatus(
            name: "alice", publicKey: key(2).base64, tier: .free, endpoint: "192.0.2.7:40001", lastHandshakeMs: 1_764_400_200_000,
            rxBytes: 10, txBytes: 20, session: .connected, allowedUntilMs: 1_764_400_900_000, reconnectAtMs: 1_764_403_600_000,
            allowedIPs: ["10.99.0.2/32"]),
        PeerStatus(name: "bob", publicKey: key(3).base64, tier: .premium),
    ]),
    .policyReload(PolicyReloadReply(policy: sampleStatus.policy)),
    .policyReload(PolicyReloadReply(
        policy: sampleStatus.policy,
        errors: [PolicyDiagnostic(file: "policies/10-base.rules", line: 3, column: 7, message: "unknown keyword 'prot'", hint: "did you mean 'proto'?")])),
    .policyShow(PolicyShowReply(policy: sampleStatus.policy, rules: [
        PolicyRuleStatus(file: "policies/10-base.rules", line: 2, text: "block proto tcp port 25", name: "smtp", hits: 3),
        PolicyRuleStatus(file: "<default>", line: 0, text: "default allow", hits: 99),
    ])),
    .kick(KickReply(peer: "alice", endedSession: true)),
    .capture(CaptureReply(enabled: true, detail: "full", directory: "/var/lib/tunnelvision/capture")),
    .failure(.notFound, "no peer named 'carol'"),
]

@Suite struct ControlWireTests {
    @Test(arguments: [ControlRequest.status, .peers, .policyReload, .policyShow, .kick(peer: "alice"),
                      .capture(enabled: true, detail: "metadata"), .capture(enabled: false, detail: "full")])
    func requestsRoundTrip(request: ControlRequest) throws {
        let bytes = ControlWire.encode(request)
        #expect(bytes.last == UInt8(ascii: "\n"))
        #expect(bytes.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(try ControlWire.decodeRequest(Array(bytes.dropLast())).get() == request)
    }

    @Test func requestWireFormIsDocumented() {
        #expect(String(decoding: ControlWire.encode(ControlRequest.kick(peer: "alice")), as: UTF8.self)
            == #"{"peer":"alice","type":"kick","version":1}"# + "\n")
        #expect(String(decoding: ControlWire.encode(ControlRequest.status), as: UTF8.self) == #"{"type":"status","version":1}"# + "\n")
        #expect(String(decoding: ControlWire.encode(ControlRequest.capture(enabled: true, detail: "full")), as: UTF8.self)
            == #"{"detail":"full","enabled":true,"type":"capture","version":1}"# + "\n")
    }

    @Test(arguments: sampleResponses)
    func responsesRoundTrip(response: ControlResponse) throws {
        let bytes = ControlWire.encode(response)
        #expect(bytes.dropLast().contains(UInt8(ascii: "\n")) == false)
        #expect(try ControlWire.decodeResponse(Array(bytes.dropLast())).get() == response)
    }

    @Test func errorReplyWireForm() {
        #expect(String(decoding: ControlWire.encode(ControlResponse.failure(.unknownRequest, "x")), as: UTF8.self)
            == #"{"error":{"code":"unknownRequest","message":"x"},"type":"error","version":1}"# + "\n")
    }

    @Test func newlinesInStringsAreEscaped() throws {
        let r = ControlResponse.kick(KickReply(peer: "a\nb", endedSession: false))
        let bytes = ControlWire.encode(r)
        #expect(bytes.filter { $0 == UInt8(ascii: "\n") }.count == 1)
        #expect(try ControlWire.decodeResponse(Array(bytes.dropLast())).get() == r)
    }

    @Test func unknownRequestTypeDecodesAsUnknown() throws {
        let r = try ControlWire.decodeRequest(Array(#"{"version":1,"type":"explain","flow":"tcp 1.2.3.4 -> 5.6.7.8"}"#.utf8)).get()
        #expect(r == .unknown(type: "explain"))
    }

    @Test func unknownResponseTypeDecodesAsUnknown() throws {
        let r = try ControlWire.decodeResponse(Array(#"{"version":2,"type":"stats","stats":{}}"#.utf8)).get()
        #expect(r == .unknown(type: "stats"))
    }

    @Test func newerFieldsAreIgnored() throws {
        let r = try ControlWire.decodeResponse(Array(#"{"version":1,"type":"kick","kick":{"peer":"a","endedSession":true,"extra":5},"more":1}"#.utf8)).get()
        #expect(r == .kick(KickReply(peer: "a", endedSession: true)))
    }

    @Test(arguments: [
        ("", ControlErrorCode.malformedRequest, "request is not a JSON object"),
        ("[1,2]", .malformedRequest, "request is not a JSON object"),
        ("{\"type\":\"status\"}", .malformedRequest, "request has no \"version\""),
        ("{\"version\":\"1\",\"type\":\"status\"}", .malformedRequest, "request is not a JSON object"),
        ("{\"version\":2,\"type\":\"status\"}", .unsupportedVersion, "request version 2 is not supported; this daemon speaks version 1"),
        ("{\"version\":0,\"type\":\"status\"}", .unsupportedVersion, "request version 0 is not supported; this daemon speaks version 1"),
        ("{\"version\":1}", .malformedRequest, "malformed request: missing field \"type\""),
        ("{\"version\":1,\"type\":\"kick\"}", .malformedRequest, "malformed request: missing field \"peer\""),
        ("{\"version\":1,\"type\":\"kick\",\"peer\":7}", .malformedRequest, "malformed request: wrong type at peer"),
        ("{\"version\":1,\"type\":\"status\"", .malformedRequest, "request is not a JSON object"),
    ] as [(String, ControlErrorCode, String)])
    func malformedRequestsGetTypedErrors(text: String, code: ControlErrorCode, message: String) {
        switch ControlWire.decodeRequest(Array(text.utf8)) {
        case .success(let r): Issue.record("decoded \(r)")
        case .failure(let e):
            #expect(e.code == code)
            #expect(e.message == message)
        }
    }

    @Test func everyTruncationOfARequestIsHandled() {
        let full = Array(ControlWire.encode(ControlRequest.kick(peer: "alice")).dropLast())
        for n in 0..<full.count {
            if case .success(let r) = ControlWire.decodeRequest(Array(full[0..<n])) { Issue.record("prefix \(n) decoded as \(r)") }
        }
    }

    @Test func everyTruncationOfAResponseIsHandled() {
        for response in sampleResponses {
            let full = Array(ControlWire.encode(response).dropLast())
            for n in 0..<full.count {
                if case .success(let r) = ControlWire.decodeResponse(Array(full[0..<n])) { Issue.record("prefix \(n) decoded as \(r)") }
            }
        }
    }
}
