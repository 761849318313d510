import Core
/// What `FlowTable.track` did for one packet. Events come back in it rather than through a
/// callback: at most one flow opens and one ends per packet.
public struct FlowTrackResult: Sendable {
    /// The packet's flow.
    public var handle: FlowHandle
    /// True when this packet opened the flow (a new entry: it needs a verdict).
    public var opened: Bool
    /// True when the packet goes from responder to originator.
    public var isReply: Bool
    /// A flow that ended to make this packet's entry: the same key's expired entry, or the
    /// least recently used entry when the table was full.
    public var ended: FlowRecord?

    @inlinable init(handle: FlowHandle, opened: Bool, isReply: Bool, ended: FlowRecord?) {
        self.handle = handle
        self.opened = opened
        self.isReply = isReply
        self.ended = ended
    }
}
