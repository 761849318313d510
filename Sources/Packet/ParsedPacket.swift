import Core
/// What `PacketParser.parse` learned from one IP packet: a small value (no heap), valid only as
/// a description of the buffer it was parsed from (offsets index into that buffer).
///
/// Fields that a protocol does not have are zero: `sourcePort`/`destinationPort` for ICMP,
/// `tcpFlags` for UDP, `icmpType` for TCP, and all transport fields for a later fragment
/// (`hasTransportHeader == false`).
public struct ParsedPacket: Equatable, Sendable {
    /// 4 or 6.
    public var version: UInt8
    /// Source address.
    public var source: IPAddress
    /// Destination address.
    public var destination: IPAddress
    /// The upper-layer protocol: IPv4 Protocol, or the IPv6 Next Header after the extension chain.
    public var proto: IPProtocol
    /// IPv4 TTL or IPv6 Hop Limit.
    public var ttl: UInt8
    /// TCP/UDP source port (0 when the packet has none).
    public var sourcePort: UInt16
    /// TCP/UDP destination port (0 when the packet has none).
    public var destinationPort: UInt16
    /// TCP control bits (empty unless TCP).
    public var tcpFlags: TCPFlags
    /// TCP sequence number (0 unless TCP).
    public var tcpSequence: UInt32
    /// TCP acknowledgment number (0 unless TCP).
    public var tcpAcknowledgment: UInt32
    /// ICMP/ICMPv6 type (0 unless ICMP; note ICMPv4 echo reply is also 0 — check `proto`).
    public var icmpType: UInt8
    /// ICMP/ICMPv6 code.
    public var icmpCode: UInt8
    /// ICMP/ICMPv6 echo identifier (echo request/reply only, else 0).
    public var icmpIdentifier: UInt16
    /// Fragmentation facts (`.none` when not fragmented).
    public var fragment: FragmentInfo
    /// True when the transport header was present and parsed (TCP, UDP, ICMP, ICMPv6 in a
    /// non-fragment or first fragment). False for later fragments and other protocols.
    public var hasTransportHeader: Bool
    /// Byte offset of the transport header (= length of the IP header incl. options/extensions).
    public var transportOffset: Int
    /// Byte offset of the transport payload (after the TCP/UDP/ICMP header; for other
    /// protocols and later fragments equal to `transportOffset`).
    public var payloadOffset: Int
    /// Length of the IP packet from its header (IPv4 Total Length, IPv6 40 + Payload Length).
    /// Bytes in the buffer beyond it (link padding) are not part of the packet.
    public var totalLength: Int

    /// True for an ICMP error message, which quotes the packet it is about at `payloadOffset`
    /// (ICMPv4 types 3, 4, 5, 11, 12 — RFC 792; ICMPv6 types 1–4 — RFC 4443 §2.1). Parse the
    /// quote with `PacketParser.parseQuoted` to find its flow.
    @inlinable public var isICMPError: Bool {
        guard hasTransportHeader else { return false }
        if version == 4 && proto.rawValue == 1 {
            switch icmpType {
            case 3, 4, 5, 11, 12: return true
            default: return false
            }
        }
        if version == 6 && proto.rawValue == 58 { return icmpType >= 1 && icmpType <= 4 }
        return false
    }

    /// Bytes of transport payload (`totalLength - payloadOffset`).
    @inlinable public var payloadLength: Int { totalLength - payloadOffset }

    /// An all-zero value, filled in by the parser.
    @inlinable public init() {
        version = 0
        source = IPAddress(v4: 0)
        destination = IPAddress(v4: 0)
        proto = IPProtocol(rawValue: 0)
        ttl = 0
        sourcePort = 0
        destinationPort = 0
        tcpFlags = []
        tcpSequence = 0
        tcpAcknowledgment = 0
        icmpType = 0
        icmpCode = 0
        icmpIdentifier = 0
        fragment = .none
        hasTransportHeader = false
        transportOffset = 0
        payloadOffset = 0
        totalLength = 0
    }
}
