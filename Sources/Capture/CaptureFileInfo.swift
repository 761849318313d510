import Core
/// One capture file in the capture directory, as listed by `CaptureFiles.list`.
public struct CaptureFileInfo: Hashable, Sendable {
    /// Sequence number from the name (`capture-000042.pcap` is 42).
    public var sequence: UInt32
    /// Full path.
    public var path: String
    /// Size in bytes.
    public var size: Int
    /// Last modification time, nanoseconds since the Unix epoch.
    public var modifiedNanoseconds: UInt64
    /// Time of the first packet, nanoseconds since the epoch (nil: not scanned, or no packets).
    public var firstPacketNanoseconds: UInt64?
    /// Time of the last packet (nil: not scanned, or no packets).
    public var lastPacketNanoseconds: UInt64?
    /// Number of packets (nil: not scanned).
    public var packetCount: Int?

    public init(sequence: UInt32, path: String, size: Int, modifiedNanoseconds: UInt64,
                firstPacketNanoseconds: UInt64? = nil, lastPacketNanoseconds: UInt64? = nil, packetCount: Int? = nil) {
        self.sequence = sequence
        self.path = path
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.firstPacketNanoseconds = firstPacketNanoseconds
        self.lastPacketNanoseconds = lastPacketNanoseconds
        self.packetCount = packetCount
    }
}
