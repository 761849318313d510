import Core
/// The slot of a flow in its `FlowTable`. Valid until the flow leaves the table; the next
/// `track` may reuse the slot for another flow, so use it at once, don't keep it.
public struct FlowHandle: Hashable, Sendable {
    /// Slot index.
    public let index: Int32
    @inlinable init(_ index: Int32) { self.index = index }
    /// The handle of slot `slot` (0 ..< the table's capacity), for side tables kept per slot
    /// (the engine's host state): the slot may hold another flow by now, so compare the
    /// entry's `id` with the one noted before trusting it.
    @inlinable public init(slot: Int32) { self.index = slot }
}
