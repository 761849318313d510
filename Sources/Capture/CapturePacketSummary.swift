import Core
import Packet

/// The addresses, protocol and ports of a raw IP packet: just enough to pick a flow's packets out
/// of a capture file. Addresses follow `Packet.IPAddress` (IPv4 in the low 32 bits of `low`).
///
/// Parsing is deliberately minimal (RFC 791 header, RFC 8200 fixed header plus the hop-by-hop,
/// routing and destination-options extension headers); ports are read only from the first
/// fragment. They are the ports the flow table keys the packet's flow by: TCP and UDP ports, and
/// for ICMP/ICMPv6 `FlowKey.icmpPorts` (the echo identifier, or type and code), so a flow key
/// taken from the store or the capture index matches its packets. A snaplen of 128 bytes always
/// covers what it reads.
public struct CapturePacketSummary: Hashable, Sendable {
    /// 4 or 6.
    public var ipVersion: UInt8
    /// IP protocol number of the transport header (after IPv6 extension headers).
    public var ipProtocol: UInt8
    /// Source address, high 64 bits (IPv6 only).
    public var sourceHigh: UInt64
    /// Source address, low 64 bits.
    public var sourceLow: UInt64
    /// Destination address, high 64 bits (IPv6 only).
    public var destinationHigh: UInt64
    /// Destination address, low 64 bits.
    public var destinationLow: UInt64
    /// Source port of the flow: TCP/UDP source port, ICMP as `FlowKey.icmpPorts`, 0 otherwise.
    public var sourcePort: UInt16
    /// Destination port of the flow: TCP/UDP destination port, ICMP as `FlowKey.icmpPorts`, 0 otherwise.
    public var destinationPort: UInt16

    public init(ipVersion: UInt8, ipProtocol: UInt8, sourceHigh: UInt64 = 0, sourceLow: UInt64,
                destinationHigh: UInt64 = 0, destinationLow: UInt64, sourcePort: UInt16 = 0, destinationPort: UInt16 = 0) {
        self.ipVersion = ipVersion
        self.ipProtocol = ipProtocol
        self.sourceHigh = sourceHigh
        self.sourceLow = sourceLow
        self.destinationHigh = destinationHigh
        self.destinationLow = destinationLow
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
    }

    /// Parses the start of a raw IP packet; nil when it is not a well-formed IPv4/IPv6 header.
    public init?(packet bytes: UnsafeRawBufferPointer) {
        func be16(_ o: Int) -> UInt16 { UInt16(bytes[o]) << 8 | UInt16(bytes[o + 1]) }
        func be32(_ o: Int) -> UInt32 { UInt32(be16(o)) << 16 | UInt32(be16(o + 2)) }
        func be64(_ o: Int) -> UInt64 { UInt64(be32(o)) << 32 | UInt64(be32(o + 4)) }
        guard bytes.count >= 1 else { return nil }
        var transport: Int
        var fragmentFollows = false
        switch bytes[0] >> 4 {
        case 4:
            let headerLength = Int(bytes[0] & 0x0F) * 4
            guard headerLength >= 20, bytes.count >= 20 else { return nil }
            ipVersion = 4
            ipProtocol = bytes[9]
            sourceHigh = 0
            sourceLow = UInt64(be32(12))
            destinationHigh = 0
            destinationLow = UInt64(be32(16))
            transport = headerLength
            fragmentFollows = be16(6) & 0x1FFF != 0  // not the first fragment: no ports here
        case 6:
            guard bytes.count >= 40 else { return nil }
            ipVersion = 6
            sourceHigh = be64(8)
            sourceLow = be64(16)
            destinationHigh = be64(24)
            destinationLow = be64(32)
            var next = bytes[6]
            transport = 40
            // Hop-by-hop (0), routing (43), destination options (60): length in 8-byte units.
            while next == 0 || next == 43 || next == 60, bytes.count >= transport + 2 {
                let length = (Int(bytes[transport + 1]) + 1) * 8
                next = bytes[transport]
                transport += length
            }
            if next == 44, bytes.count >= transport + 8 {  // fragment header
                fragmentFollows = be16(transport + 2) & 0xFFF8 != 0
                next = bytes[transport]
                transport += 8
            }
            ipProtocol = next
        default:
            return nil
        }
        sourcePort = 0
        destinationPort = 0
        if (ipProtocol == 6 || ipProtocol == 17), !fragmentFollows, bytes.count >= transport + 4 {
            sourcePort = be16(transport)
            destinationPort = be16(transport + 2)
        } else if ipProtocol == (ipVersion == 4 ? 1 : 58), !fragmentFollows, bytes.count >= transport + 8 {
            // The flow table's rule (PacketParser needs the 8-byte ICMP header too).
            (sourcePort, destinationPort) = FlowKey.icmpPorts(
                ipVersion: ipVersion, type: bytes[transport], code: bytes[transport + 1], identifier: be16(transport + 4))
        }
    }
}
