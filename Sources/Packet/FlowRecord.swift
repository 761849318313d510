import Core
/// A flow that left the table, with its final counters: the event the daemon turns into a
/// history row.
public struct FlowRecord: Sendable, Equatable {
    /// The entry as it was when it left.
    public var entry: FlowEntry
    /// Why it left.
    public var reason: FlowEndReason
}
