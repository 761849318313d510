import Core
/// A flow's running totals. "Out" is what the peer sent (peer → destination), "in" the return
/// traffic (destination → peer). Totals, not deltas: the latest value wins.
public struct FlowCounters: Hashable, Sendable {
    /// Bytes the peer sent.
    public var bytesOut: UInt64
    /// Bytes sent back to the peer.
    public var bytesIn: UInt64
    /// Packets the peer sent.
    public var packetsOut: UInt64
    /// Packets sent back to the peer.
    public var packetsIn: UInt64

    /// Counters with the given totals (all zero by default).
    public init(bytesOut: UInt64 = 0, bytesIn: UInt64 = 0, packetsOut: UInt64 = 0, packetsIn: UInt64 = 0) {
        self.bytesOut = bytesOut
        self.bytesIn = bytesIn
        self.packetsOut = packetsOut
        self.packetsIn = packetsIn
    }
}
