/// Packets a TUN device dropped and counted instead of throwing.
public struct TunDeviceCounters: Sendable, Equatable {
    /// Packets longer than a batch slot, discarded on read.
    public var truncatedReads: UInt64 = 0
    /// Packets the kernel refused on write (malformed, or the interface is down).
    public var refusedWrites: UInt64 = 0
    public init() {}
}
