import Core
/// The slot of a flow in its `FlowTable`. Valid until the flow leaves the table; the next
/// `track` may reuse the slot for another flow, so use it at once, don't keep it.
public struct FlowHandle: Hashable, Sendable {
    /// Slot index.
    public let index: Int32
    @inlinable init(_ index: Int32) { self.index = index }
}
