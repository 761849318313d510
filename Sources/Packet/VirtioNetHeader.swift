import Core
/// `struct virtio_net_hdr` (Linux `include/uapi/linux/virtio_net.h`; virtio spec 1.x §5.1.6):
/// the 10 bytes that prefix every read and write of a TUN device opened with `IFF_VNET_HDR`.
/// Fields are little-endian (the TUN default on little-endian hosts, `TUNSETVNETLE` unset).
///
/// Layout: u8 flags, u8 gso_type, u16 hdr_len, u16 gso_size, u16 csum_start, u16 csum_offset.
public struct VirtioNetHeader: Sendable, Equatable {
    /// Bytes on the wire.
    public static let size = 10

    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the L4 checksum at `checksumStart + checksumOffset` holds
    /// only the folded pseudo-header sum; the sum from `checksumStart` to the end completes it.
    public static let needsChecksum: UInt8 = 1
    /// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was already verified.
    public static let dataValid: UInt8 = 2

    /// `VIRTIO_NET_HDR_GSO_NONE`: a single packet.
    public static let gsoNone: UInt8 = 0
    /// `VIRTIO_NET_HDR_GSO_TCPV4`: an IPv4 TCP super-packet split every `gsoSize` payload bytes.
    public static let gsoTCPv4: UInt8 = 1
    /// `VIRTIO_NET_HDR_GSO_UDP`: UDP fragmentation offload (UFO); not supported here.
    public static let gsoUDP: UInt8 = 3
    /// `VIRTIO_NET_HDR_GSO_TCPV6`: an IPv6 TCP super-packet.
    public static let gsoTCPv6: UInt8 = 4
    /// `VIRTIO_NET_HDR_GSO_UDP_L4`: a UDP super-packet split into datagrams of `gsoSize` (USO).
    public static let gsoUDPL4: UInt8 = 5
    /// `VIRTIO_NET_HDR_GSO_ECN`: or-ed into `gsoType` when the TCP packet carries ECN (CWR).
    public static let gsoECN: UInt8 = 0x80

    /// `VIRTIO_NET_HDR_F_*` bits.
    public var flags: UInt8
    /// `VIRTIO_NET_HDR_GSO_*`, possibly with `gsoECN`.
    public var gsoType: UInt8
    /// Length of the IP + transport headers (a hint on reads).
    public var headerLength: UInt16
    /// Payload bytes per segment (the MSS for TCP).
    public var gsoSize: UInt16
    /// Where checksumming starts, from the first byte of the IP header.
    public var checksumStart: UInt16
    /// Offset of the checksum field from `checksumStart` (16 for TCP, 6 for UDP).
    public var checksumOffset: UInt16

    /// All zero: a plain packet, no offload.
    @inlinable public init() {
        flags = 0; gsoType = 0; headerLength = 0; gsoSize = 0; checksumStart = 0; checksumOffset = 0
    }

    /// A header with every field given.
    @inlinable public init(flags: UInt8, gsoType: UInt8, headerLength: UInt16, gsoSize: UInt16,
                           checksumStart: UInt16, checksumOffset: UInt16) {
        self.flags = flags
        self.gsoType = gsoType
        self.headerLength = headerLength
        self.gsoSize = gsoSize
        self.checksumStart = checksumStart
        self.checksumOffset = checksumOffset
    }

    /// Decodes the first 10 bytes of `bytes`; throws `truncatedHeader` when there are fewer.
    @inlinable public init(_ bytes: UnsafeRawBufferPointer) throws(OffloadError) {
        guard bytes.count >= VirtioNetHeader.size else { throw .truncatedHeader }
        func le16(_ o: Int) -> UInt16 { UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: o, as: UInt16.self)) }
        self.init(flags: bytes[0], gsoType: bytes[1], headerLength: le16(2), gsoSize: le16(4),
                  checksumStart: le16(6), checksumOffset: le16(8))
    }

    /// Writes the 10 bytes at `to`.
    @inlinable public func write(to: UnsafeMutableRawPointer) {
        to.storeBytes(of: flags, as: UInt8.self)
        to.storeBytes(of: gsoType, toByteOffset: 1, as: UInt8.self)
        to.storeBytes(of: headerLength.littleEndian, toByteOffset: 2, as: UInt16.self)
        to.storeBytes(of: gsoSize.littleEndian, toByteOffset: 4, as: UInt16.self)
        to.storeBytes(of: checksumStart.littleEndian, toByteOffset: 6, as: UInt16.self)
        to.storeBytes(of: checksumOffset.littleEndian, toByteOffset: 8, as: UInt16.self)
    }
}
