import Core
/// Packets a TUN device dropped and counted instead of throwing.
public struct TunDeviceCounters: Sendable, Equatable {
    /// Packets longer than a batch slot, discarded on read.
    public var truncatedReads: UInt64 = 0
    /// Packets the kernel refused on write (malformed, or the interface is down).
    public var refusedWrites: UInt64 = 0
    /// Reads whose offload header or super-packet was malformed (dropped).
    public var malformedReads: UInt64 = 0
    /// GSO super-packets read and split into packets (offloads on).
    public var superPacketsRead: UInt64 = 0
    /// Super-packets written after coalescing (offloads on).
    public var superPacketsWritten: UInt64 = 0
    /// Packets that went into those super-packets.
    public var packetsCoalesced: UInt64 = 0
    public init() {}
}
