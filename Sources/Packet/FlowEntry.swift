/// One flow in a `FlowTable`: its key and id, when it was seen, counters each way, its TCP
/// state, and the verdict cached for it.
///
/// "Original" is the direction of the flow's first packet (its originator), "reply" the other.
public struct FlowEntry: Sendable, Equatable {
    /// The canonical key.
    public var key: FlowKey
    /// Stable id, assigned in increasing order from 1 by the table (for history rows).
    public var id: UInt64
    /// The `reversed` bit (see `FlowKey.oriented`) of the originator's packets.
    public var originReversed: Bool
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
    /// TCP state (meaningless for other protocols).
    public var tcp: TCPTracker
    /// The policy generation the cached verdict was taken under; 0 means no verdict yet.
    /// Compare with the policy's generation and re-evaluate when they differ.
    public var verdictGeneration: UInt64
    /// The cached action (the policy module's encoding).
    public var verdictAction: UInt8
    /// The index of the deciding rule, or -1 for the default.
    public var verdictRuleIndex: Int32

    /// The original-direction source address.
    public var originator: IPAddress { originReversed ? key.addressB : key.addressA }
    /// The original-direction destination address.
    public var responder: IPAddress { originReversed ? key.addressA : key.addressB }
    /// The original-direction source port.
    public var originatorPort: UInt16 { originReversed ? key.portB : key.portA }
    /// The original-direction destination port.
    public var responderPort: UInt16 { originReversed ? key.portA : key.portB }
}
