import Core
/// One flow in a `FlowTable`: its key and id, when it was seen, counters each way, its TCP
/// state, and the verdict cached for it.
///
/// "Original" is the direction of the flow's first packet (its originator), "reply" the other.
public struct FlowEntry: Sendable, Equatable {
    // Field order keeps the struct at 112 bytes without padding (FlowTable packs it with its
    // 16 bytes of links into two cache lines, the key in the first).

    /// The canonical key.
    public var key: FlowKey
    /// Stable id, assigned in increasing order from 1 by the table (for history rows).
    public var id: UInt64
    /// Time of the first packet (the table's clock, milliseconds).
    public var firstSeen: Int64
    /// Time of the latest packet.
    public var lastSeen: Int64
    /// Packets from the originator.
    public var packetsOriginal: UInt64
    /// Bytes (IP length) from the originator.
    public var bytesOriginal: UInt64
    /// Packets from the responder.
    public var packetsReply: UInt64
    /// Bytes (IP length) from the responder.
    public var bytesReply: UInt64
    /// The policy generation the cached verdict was taken under; 0 means no verdict yet.
    /// Compare with the policy's generation and re-evaluate when they differ.
    public var verdictGeneration: UInt64
    /// The index of the deciding rule, or -1 for the default.
    public var verdictRuleIndex: Int32
    /// TCP state (meaningless for other protocols).
    public var tcp: TCPTracker
    /// The cached action (the policy module's encoding).
    public var verdictAction: UInt8
    /// The `reversed` bit (see `FlowKey.oriented`) of the originator's packets.
    public var originReversed: Bool

    /// A new flow's entry: its first packet came at `now` with `tcpFlags`, in direction
    /// `originReversed`; counters zero (the table counts the packet), no verdict.
    @usableFromInline init(key: FlowKey, id: UInt64, originReversed: Bool, now: Int64, tcpFlags: TCPFlags) {
        self.key = key
        self.id = id
        firstSeen = now
        lastSeen = now
        packetsOriginal = 0
        bytesOriginal = 0
        packetsReply = 0
        bytesReply = 0
        verdictGeneration = 0
        verdictRuleIndex = -1
        tcp = TCPTracker(firstFlags: tcpFlags)
        verdictAction = 0
        self.originReversed = originReversed
    }

    /// The original-direction source address.
    public var originator: IPAddress { originReversed ? key.addressB : key.addressA }
    /// The original-direction destination address.
    public var responder: IPAddress { originReversed ? key.addressA : key.addressB }
    /// The original-direction source port.
    public var originatorPort: UInt16 { originReversed ? key.portB : key.portA }
    /// The original-direction destination port.
    public var responderPort: UInt16 { originReversed ? key.portA : key.portB }
}
