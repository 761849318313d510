import SystemIO
import Core
import Packet
import Policy
import WireGuard

/// Hooks the gateway engine calls so history can follow its flows without living in the data
/// path. The daemon installs a `History`; an engine without hooks (tests, benchmarks with
/// recording off) skips every call. Peers are read from the engine's `PeerRegistry`; handshakes
/// go to `HandshakeAdmission`.
///
/// Calls come from the data-path threads: implementations must not block (no disk, no waiting
/// on other threads; a short mutex and a bounded queue are fine). Flow hooks run under the flow
/// table's lock, once per flow decision, never per packet of a flow with a cached verdict.
public protocol GatewayEvents: AnyObject, Sendable {
    /// A flow was decided (its first packet, or its first packet under a new policy generation):
    /// the decision as taken (`FlowDecision`), reported once.
    func flowDecided(_ decision: FlowDecision)
    /// A flow left the table (expired, evicted, removed).
    func flowEnded(_ record: FlowRecord)
    /// The timer thread's tick, under the flow lock (`monoMs`: the table's clock).
    func timerTick(flows: FlowTable, monoMs: Int64)
    /// The engine is stopping: the flows still in the table (under the flow lock).
    func engineStopping(flows: FlowTable, monoMs: Int64)
    /// New flows of `peer` were refused (see the default implementation below).
    func flowRefused(peer: UInt32, key: FlowKey, reason: FlowRefusal, refused: UInt64, monoMs: Int64)
}

extension GatewayEvents {
    /// New flows of `peer` were refused because of its flow caps (`MaxFlows`, `NewFlowRate`;
    /// reason `flow-limit`) or because the shared table was full of other peers' flows
    /// (`tableFull`). Coalesced by the engine: at most one call per peer per second, `refused`
    /// counting the refusals since the last call, `key` the latest refused flow's. Under the flow
    /// lock. Default: nothing.
    public func flowRefused(peer: UInt32, key: FlowKey, reason: FlowRefusal, refused: UInt64, monoMs: Int64) {}
}
