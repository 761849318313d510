import Core
/// Why a TUN offload header or the packet behind it cannot be used (reads with `IFF_VNET_HDR`,
/// see `VirtioNetHeader` and `GSOSegmenter`). The packet is dropped and counted; nothing crashes.
public enum OffloadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer than 10 bytes where a `struct virtio_net_hdr` was expected.
    case truncatedHeader
    /// A `gso_type` this gateway does not split (UFO `VIRTIO_NET_HDR_GSO_UDP`, ECN on UDP, unknown).
    case unsupportedGSOType(UInt8)
    /// A GSO packet whose `gso_size` is 0.
    case zeroSegmentSize
    /// The packet does not match what the header claims (IP version, protocol, extension
    /// headers, fragment, missing payload); the string says which.
    case headerMismatch(String)
    /// `csum_start + csum_offset + 2` lies beyond the packet.
    case checksumOutOfRange
    /// Splitting would give more segments than `GSOSegmenter.maxTCPSegments`/`maxUDPSegments`.
    case tooManySegments
    /// The packet ends inside its IP or transport header.
    case truncatedPacket

    public var description: String {
        switch self {
        case .truncatedHeader:
            return "TUN read shorter than the 10-byte virtio_net_hdr: is the device opened with IFF_VNET_HDR on both sides?"
        case .unsupportedGSOType(let t):
            return "virtio_net_hdr gso_type \(t) is not supported (only TCPv4 1, TCPv6 4, UDP_L4 5, ECN 0x80 on TCP): check the TUNSETOFFLOAD flags"
        case .zeroSegmentSize:
            return "GSO packet with gso_size 0: cannot split it into segments"
        case .headerMismatch(let what):
            return "GSO packet does not match its virtio_net_hdr: \(what)"
        case .checksumOutOfRange:
            return "virtio_net_hdr csum_start + csum_offset points past the end of the packet"
        case .tooManySegments:
            return "GSO packet would split into more segments than the cap (\(GSOSegmenter.maxTCPSegments) TCP, \(GSOSegmenter.maxUDPSegments) UDP)"
        case .truncatedPacket:
            return "packet ends inside its IP or transport header"
        }
    }
}
