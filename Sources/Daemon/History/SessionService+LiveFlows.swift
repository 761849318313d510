import Engine
import Core
import ControlProtocol
import Packet
import Policy

extension SessionService {
    /// The flows in the engine's table now (control request `liveFlows`, for `tunnelctl explain
    /// 'FLOW'`), optionally only `peer`'s. The peer of a flow is its owner in the table, the peer
    /// that opened it. Ids match the store's `flows.id`.
    public func liveFlows(peer: String?) -> [LiveFlow] {
        let dir = engine.registry.current
        var out: [LiveFlow] = []
        engine.withFlows { table in
            table.forEach { handle, e in
                let name = dir.name(of: table.owner(of: handle))
                if let peer, name != peer { return }
                let verdict = e.verdictGeneration == 0 ? "pending" : (Verdict(rawValue: e.verdictAction)?.description ?? "pending")
                out.append(LiveFlow(
                    id: history.idBase &+ Int64(e.id), peer: name, proto: e.key.proto.rawValue,
                    src: e.originator.description, srcPort: e.originatorPort, dst: e.responder.description,
                    dstPort: e.responderPort, verdict: verdict, firstSeenMs: history.wall(e.firstSeen),
                    lastSeenMs: history.wall(e.lastSeen), bytesOut: e.bytesOriginal, bytesIn: e.bytesReply,
                    packetsOut: e.packetsOriginal, packetsIn: e.packetsReply))
            }
        }
        return out.sorted { $0.id < $1.id }
    }
}
