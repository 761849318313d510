import Core
/// One record of the live feed: the metadata of a packet or a flow/peer event (docs/ring.md, docs/capture.md).
///
/// It is a plain value (no references), so producing one allocates nothing. Addresses follow
/// `Packet.IPAddress`: a 128-bit value as two big-endian halves, an IPv4 address in the low 32
/// bits of `low` with `high == 0`; `ipVersion` says which. In the slot they are written in network
/// byte order (docs/ring.md).
public struct LiveRecord: Hashable, Sendable {
    /// Wall-clock time of the event, nanoseconds since the Unix epoch.
    public var timeNanoseconds: UInt64 = 0
    /// The flow table's identifier of the flow (0: no flow).
    public var flowID: UInt64 = 0
    /// What happened.
    public var kind: LiveEventKind = .packet
    /// Which way the packet travelled; nil when the slot holds a byte no tunneld writes.
    public var direction: Direction? = .out
    /// IP protocol number (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6 …).
    public var ipProtocol: UInt8 = 0
    /// 4 or 6 (0 for events without addresses).
    public var ipVersion: UInt8 = 0
    /// Source address, high 64 bits (IPv6 only).
    public var sourceHigh: UInt64 = 0
    /// Source address, low 64 bits (IPv4 in the low 32).
    public var sourceLow: UInt64 = 0
    /// Destination address, high 64 bits (IPv6 only).
    public var destinationHigh: UInt64 = 0
    /// Destination address, low 64 bits (IPv4 in the low 32).
    public var destinationLow: UInt64 = 0
    /// Source port (TCP/UDP), ICMP type/code otherwise, or 0.
    public var sourcePort: UInt16 = 0
    /// Destination port (TCP/UDP) or 0.
    public var destinationPort: UInt16 = 0
    /// IP packet length in bytes.
    public var length: UInt32 = 0
    /// TCP flags byte (FIN 0x01 … CWR 0x80), 0 for other protocols.
    public var tcpFlags: UInt8 = 0
    /// The policy decision; nil when the slot holds a byte no tunneld writes.
    public var verdict: Verdict? = .allow
    /// Index of the deciding rule in the compiled policy, or `LiveRecord.noRule`.
    public var ruleIndex: UInt32 = LiveRecord.noRule
    /// Index of the peer in the daemon's peer table, or `LiveRecord.noPeer`.
    public var peerIndex: UInt32 = LiveRecord.noPeer
    /// The peer's name (16 bytes at most).
    public var peerName: LivePeerName = .none
    /// Capture file sequence holding this packet (meaningful when `captureOffset != 0`).
    public var captureFileSequence: UInt32 = 0
    /// Byte offset of this packet's pcap record in that file; 0 means "not captured" (no record
    /// can start at 0: every pcap file begins with its 24-byte global header).
    public var captureOffset: UInt64 = 0
    /// Event-specific value (flow-close: bytes; refusal: reason code).
    public var detail: UInt64 = 0
    /// Second event-specific value (flow-close: packets).
    public var detail2: UInt64 = 0
    /// The policy generation whose rule `ruleIndex` indexes (0: not known — a record of an
    /// older tunneld, or no verdict), so a reader never names another generation's rule.
    public var policyGeneration: UInt64 = 0

    /// `ruleIndex` when no rule decided (default verdict).
    public static let noRule = UInt32.max
    /// `peerIndex` when the event is not tied to a peer.
    public static let noPeer = UInt32.max

    /// A record with every field zero / none.
    public init() {}
}
