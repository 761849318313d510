import SystemIO
import Core
import Packet
import Policy

/// The engine's port to live observation (the live ring and packet capture), declared next to
/// the engine that calls it; the daemon's `PacketObserver` implements it. Called on the data
/// path under the flow lock (`beginBatch` … `endBatch`, `packet`, `flowEnded`) and outside it
/// (`noteRefusal`, `noteHandshake`, `tick`). An implementation returns at once when nothing
/// watches: the engine calls it for every decided packet.
public protocol PacketObserving: AnyObject, Sendable {
    /// Starts a batch of packets; true when anything watches it. When false the engine makes no
    /// `packet`/`flowEnded` call for the batch.
    func beginBatch() -> Bool
    /// Ends a batch (wakes a waiting watcher at most once).
    func endBatch()
    /// One packet after its verdict: the IP packet, its parse, its flow after tracking, whether
    /// it opened the flow, the verdict, the peer's handle and which side sent it.
    func packet(_ packet: ObservedBytes, _ parsed: ParsedPacket, handle: FlowHandle, entry: FlowEntry,
                opened: Bool, action: Verdict, peer: UInt32, fromPeer: Bool)
    /// A flow left the table; `peer` is its peer's handle when known (else `noPeer`).
    func flowEnded(_ record: FlowRecord, peer: UInt32)
    /// A peer was refused (free-tier pause, admin refusal).
    func noteRefusal(peer: UInt32, reason: UInt64)
    /// A peer completed a handshake.
    func noteHandshake(peer: UInt32)
    /// Flow `flowID` of `peer` was decided `verdict` knowing its host (the live ring's
    /// `flow-host` record). Under the flow lock, on a data-path or the timer thread.
    func noteFlowHost(flowID: UInt64, peer: UInt32, verdict: Verdict, host: String)
    /// The timer thread's periodic call (capture rotation and flushing).
    func tick()
}

extension PacketObserving {
    public func noteFlowHost(flowID: UInt64, peer: UInt32, verdict: Verdict, host: String) {}
}

/// "No peer" for observer calls (the same value the live ring writes).
public let observedNoPeer: UInt32 = .max
