import Core
/// How the gateway moves packets through the kernel (`tunnelctl status`): the TUN offloads it
/// negotiated, whether UDP sends are segmented (GSO) and receives coalesced (GRO), and how much
/// the offloads are used.
public struct OffloadStatus: Hashable, Sendable, Codable {
    /// The TUN_F_* offloads in effect (`csum tso4 tso6 uso4 uso6`), or `off`.
    public var tun: String
    /// True while UDP sends carry several datagrams per message (UDP_SEGMENT).
    public var udpSegmentation: Bool
    /// GSO super-packets read from the TUN device and split into packets.
    public var superPacketsRead: UInt64
    /// Super-packets written to the TUN device after coalescing.
    public var superPacketsWritten: UInt64
    /// Packets that went into those written super-packets.
    public var packetsCoalesced: UInt64
    /// True when UDP receives take coalesced runs of datagrams (UDP_GRO).
    public var udpCoalescing: Bool
    /// Coalesced UDP messages received, and the datagrams they carried.
    public var coalescedReceives: UInt64
    public var coalescedDatagrams: UInt64

    public init(tun: String, udpSegmentation: Bool, superPacketsRead: UInt64, superPacketsWritten: UInt64,
                packetsCoalesced: UInt64, udpCoalescing: Bool = false, coalescedReceives: UInt64 = 0, coalescedDatagrams: UInt64 = 0)
    {
        self.tun = tun
        self.udpSegmentation = udpSegmentation
        self.superPacketsRead = superPacketsRead
        self.superPacketsWritten = superPacketsWritten
        self.packetsCoalesced = packetsCoalesced
        self.udpCoalescing = udpCoalescing
        self.coalescedReceives = coalescedReceives
        self.coalescedDatagrams = coalescedDatagrams
    }
}
