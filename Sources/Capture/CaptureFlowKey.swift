import Core
import Packet

/// A flow as the flow table knows it: protocol and the two endpoints. It matches packets in
/// both directions (A→B and B→A). Addresses follow `Packet.IPAddress`; ports are the flow
/// table's (`FlowKey`: for ICMP the echo identifier, or type and code), which is also what
/// `CapturePacketSummary` reads from a captured packet. Build a flow's key with
/// `init(proto:originator:originatorPort:responder:responderPort:)` (or from its `FlowEntry`).
public struct CaptureFlowKey: Hashable, Sendable {
    /// 4 or 6.
    public var ipVersion: UInt8
    /// IP protocol number.
    public var ipProtocol: UInt8
    /// Endpoint A address, high 64 bits (IPv6 only).
    public var aHigh: UInt64
    /// Endpoint A address, low 64 bits.
    public var aLow: UInt64
    /// Endpoint A port (0 for protocols without ports).
    public var aPort: UInt16
    /// Endpoint B address, high 64 bits (IPv6 only).
    public var bHigh: UInt64
    /// Endpoint B address, low 64 bits.
    public var bLow: UInt64
    /// Endpoint B port.
    public var bPort: UInt16

    public init(ipVersion: UInt8, ipProtocol: UInt8, aHigh: UInt64 = 0, aLow: UInt64, aPort: UInt16,
                bHigh: UInt64 = 0, bLow: UInt64, bPort: UInt16) {
        self.ipVersion = ipVersion
        self.ipProtocol = ipProtocol
        self.aHigh = aHigh
        self.aLow = aLow
        self.aPort = aPort
        self.bHigh = bHigh
        self.bLow = bLow
        self.bPort = bPort
    }

    /// The key of a flow: its protocol and its two endpoints as the flow table records them
    /// (originator as A), exactly what the daemon writes to the capture index and the store's flow
    /// row (`proto`, `src`, `src_port`, `dst`, `dst_port`). The one mapping from a flow to its
    /// capture key, used by both writer and reader.
    public init(proto: UInt8, originator: IPAddress, originatorPort: UInt16, responder: IPAddress,
                responderPort: UInt16) {
        self.init(ipVersion: originator.isIPv6 ? 6 : 4, ipProtocol: proto, aHigh: originator.high,
                  aLow: originator.low, aPort: originatorPort, bHigh: responder.high, bLow: responder.low,
                  bPort: responderPort)
    }

    /// The key of the flow in a flow-table entry.
    public init(_ entry: FlowEntry) {
        self.init(proto: entry.key.proto.rawValue, originator: entry.originator, originatorPort: entry.originatorPort,
                  responder: entry.responder, responderPort: entry.responderPort)
    }

    /// The flow a packet belongs to, seen from its sender (A = source).
    public init(_ packet: CapturePacketSummary) {
        self.init(ipVersion: packet.ipVersion, ipProtocol: packet.ipProtocol,
                  aHigh: packet.sourceHigh, aLow: packet.sourceLow, aPort: packet.sourcePort,
                  bHigh: packet.destinationHigh, bLow: packet.destinationLow, bPort: packet.destinationPort)
    }

    /// Whether `packet` belongs to this flow, in either direction.
    public func matches(_ packet: CapturePacketSummary) -> Bool {
        guard packet.ipVersion == ipVersion, packet.ipProtocol == ipProtocol else { return false }
        let forward = packet.sourceHigh == aHigh && packet.sourceLow == aLow && packet.sourcePort == aPort
            && packet.destinationHigh == bHigh && packet.destinationLow == bLow && packet.destinationPort == bPort
        let backward = packet.sourceHigh == bHigh && packet.sourceLow == bLow && packet.sourcePort == bPort
            && packet.destinationHigh == aHigh && packet.destinationLow == aLow && packet.destinationPort == aPort
        return forward || backward
    }
}
