import Core
import Engine
import Packet
import Synchronization
import Testing
import TestSupport
import WireGuard

/// An admission port that refuses while `admitting` is false, and logs every call.
final class FakeAdmission: HandshakeAdmission {
    let admitting = Atomic<Bool>(false)
    let calls = Mutex<[String]>([])

    func admitInitiation(peer: PeerHandle, refused: Bool) -> Admission {
        let yes = admitting.load(ordering: .relaxed)
        calls.withLock { $0.append("admit \(peer.rawValue) \(yes)") }
        return yes ? .admit : Admission(.refuse(.disabled))
    }

    func handshakeCompleted(peer: PeerHandle) -> Admission {
        calls.withLock { $0.append("completed \(peer.rawValue)") }
        return .admit
    }

    func handshakeRefused(peer: PeerHandle) { calls.withLock { $0.append("refused \(peer.rawValue)") } }

    func refusalCode(peer: PeerHandle) -> RefusalCode { .disabled }

    var log: [String] { calls.withLock { $0 } }
}

/// An observer port that only logs handshakes and refusals.
final class FakeObserver: PacketObserving {
    let events = Mutex<[String]>([])
    func beginBatch() -> Bool { false }
    func packet(_ packet: ObservedBytes, _ parsed: ParsedPacket, handle: FlowHandle, entry: FlowEntry, opened: Bool,
                action: Verdict, peer: UInt32, fromPeer: Bool) {}
    func flowEnded(_ record: FlowRecord, peer: UInt32) {}
    func endBatch() {}
    func tick() {}
    func noteHandshake(peer: UInt32) { events.withLock { $0.append("handshake \(peer)") } }
    func noteRefusal(peer: UInt32, reason: UInt64) { events.withLock { $0.append("refusal \(peer) \(reason)") } }
    func noteFlowHost(flowID: UInt64, peer: UInt32, verdict: Verdict, host: String) {
        events.withLock { $0.append("host \(peer) \(verdict) \(host)") }
    }
    var log: [String] { events.withLock { $0 } }
}

/// The engine asks its `HandshakeAdmission` port before the device answers an initiation: a
/// refused one gets no response, no keypair and no handshake event, and is counted as refused.
@Suite(.serialized) struct HandshakeAdmissionTests {
    @Test func refusedInitiationGetsNothingAdmittedOneCompletes() throws {
        let admission = FakeAdmission(), observer = FakeObserver()
        let h = try EngineHarness { engine in
            engine.admission = admission
            engine.observer = observer
        }
        let alice = try #require(h.engine.peer(named: "alice")).handle.rawValue

        try h.alice.sendInitiation()
        #expect(try h.receiveFromGateway(timeout: 300) == nil, "no response datagram")
        #expect(admission.log == ["admit \(alice) false", "refused \(alice)"])
        #expect(observer.log == ["refusal \(alice) 3"])  // the admission's code (disabled)
        #expect(h.engine.counters.count(.peerRefused) == 1)
        #expect(h.engine.device.status(of: PeerHandle(rawValue: alice))?.endpoint == nil, "no state taken from it")

        // Admitted: alice tries again (a fresh client with her key: hers waits REKEY_TIMEOUT).
        admission.admitting.store(true, ordering: .relaxed)
        let again = try h.client(privateKey: EngineHarness.clientKey, address: IPAddress(v4: 0xC000_0202))
        try again.handshake()
        #expect(admission.log.suffix(2) == ["admit \(alice) true", "completed \(alice)"])
        #expect(observer.log == ["refusal \(alice) 3", "handshake \(alice)"])
        let out = TestPackets.udp(from: "10.99.0.2", 40000, to: "198.19.0.2", 53)
        try again.sendPacket(out)
        #expect(h.tun.waitWritten(count: 1) == [out])
    }
}
