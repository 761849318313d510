import Core
/// How one TUN read (after its `VirtioNetHeader`) splits into ready packets: the result of
/// `GSOSegmenter.plan`, consumed by `GSOSegmenter.segment`.
public struct GSOSplit: Sendable, Equatable {
    /// What `segment` does with the packet.
    public enum Kind: Sendable, Equatable {
        /// A plain packet, copied as is.
        case copy
        /// A plain packet whose L4 checksum is completed (`VIRTIO_NET_HDR_F_NEEDS_CSUM`).
        case completeChecksum
        /// TCP over IPv4 / IPv6 split every `gsoSize` payload bytes.
        case tcp4, tcp6
        /// UDP over IPv4 / IPv6 split into datagrams of `gsoSize` payload bytes (USO).
        case udp4, udp6
    }

    /// Segments (1 for a non-GSO packet).
    public let count: Int
    /// The largest segment's length in bytes: an output buffer of this size always suffices.
    public let maxSegmentLength: Int
    /// What kind of split.
    public let kind: Kind
    /// Bytes of the packet the plan was made for.
    public let packetLength: Int
    /// IP header length (GSO kinds; 0 otherwise).
    public let ipHeaderLength: Int
    /// IP + transport header length, repeated in every segment (GSO kinds; 0 otherwise).
    public let headerLength: Int
    /// Payload bytes per segment (GSO kinds; 0 otherwise).
    public let gsoSize: Int
    /// For `completeChecksum`: where the sum starts and where the 16-bit result goes.
    public let checksumStart: Int
    /// For `completeChecksum`: the checksum field's offset in the packet.
    public let checksumField: Int

    @inlinable init(count: Int, maxSegmentLength: Int, kind: Kind, packetLength: Int, ipHeaderLength: Int = 0,
                    headerLength: Int = 0, gsoSize: Int = 0, checksumStart: Int = 0, checksumField: Int = 0) {
        self.count = count
        self.maxSegmentLength = maxSegmentLength
        self.kind = kind
        self.packetLength = packetLength
        self.ipHeaderLength = ipHeaderLength
        self.headerLength = headerLength
        self.gsoSize = gsoSize
        self.checksumStart = checksumStart
        self.checksumField = checksumField
    }
}
