import Core
/// One flow in the daemon's flow table right now (`liveFlows` reply, for `tunnelctl explain
/// 'FLOW'`). Addresses as text; times epoch ms (UTC); *out* = from the flow's originator.
public struct LiveFlow: Hashable, Sendable, Codable {
    /// The store's id of the flow (`flows.id`).
    public var id: Int64
    /// The peer the flow belongs to (by AllowedIPs), nil when none matches.
    public var peer: String?
    /// IP protocol number.
    public var proto: UInt8
    /// The originator's address and port (ports 0 or the ICMP identifier without ports).
    public var src: String
    public var srcPort: UInt16
    /// The responder's address and port.
    public var dst: String
    public var dstPort: UInt16
    /// `allow`, `block` or `reject` (the cached verdict).
    public var verdict: String
    /// First and latest packet (epoch ms).
    public var firstSeenMs: Int64
    public var lastSeenMs: Int64
    /// Totals from the originator (*out*) and back (*in*).
    public var bytesOut: UInt64
    public var bytesIn: UInt64
    public var packetsOut: UInt64
    public var packetsIn: UInt64

    /// A live flow from its fields.
    public init(id: Int64, peer: String?, proto: UInt8, src: String, srcPort: UInt16, dst: String, dstPort: UInt16,
                verdict: String, firstSeenMs: Int64, lastSeenMs: Int64, bytesOut: UInt64, bytesIn: UInt64,
                packetsOut: UInt64, packetsIn: UInt64)
    {
        self.id = id
        self.peer = peer
        self.proto = proto
        self.src = src
        self.srcPort = srcPort
        self.dst = dst
        self.dstPort = dstPort
        self.verdict = verdict
        self.firstSeenMs = firstSeenMs
        self.lastSeenMs = lastSeenMs
        self.bytesOut = bytesOut
        self.bytesIn = bytesIn
        self.packetsOut = packetsOut
        self.packetsIn = packetsIn
    }
}
