/// One row of `flows`, as the CLI reads it.
public struct Flow: Hashable, Sendable {
    public var id: Int64
    public var proto: UInt8
    public var src: StoreAddress
    public var srcPort: UInt16
    public var dst: StoreAddress
    public var dstPort: UInt16
    public var peer: String
    public var host: String?
    public var firstSeen: Int64
    public var lastSeen: Int64
    public var counters: FlowCounters
    public var verdict: FlowVerdict
    public var rule: String?
    public var capture: CaptureLocation?
    public var closedAt: Int64?
    public var closeReason: String?
}
