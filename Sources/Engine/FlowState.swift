import Packet

/// What the data path's flow decisions read and change, together behind one lock
/// (`GatewayEngine.flows`): the flow table, the fragment tracker, the host gate (pending flows,
/// their held packets, DNS-learned names) and the per-peer flow caps. `withFlowState` hands it
/// out; nothing else holds a reference to its parts, so the lock guards them by construction,
/// not by comment.
final class FlowState: @unchecked Sendable {
    // Safe: reachable only through the engine's `flows` Mutex (created and stored there alone),
    // so one thread at a time; the parts are never handed out beyond a `withLock` body.
    let table: FlowTable
    let fragments = FragmentTracker()
    let hostGate: HostGate
    let caps = FlowCaps()

    init(table: FlowTable, hostGate: HostGate) {
        self.table = table
        self.hostGate = hostGate
    }
}
