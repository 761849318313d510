import Core
/// A flow that left the table, with its final counters: the event the daemon turns into a
/// history row.
public struct FlowRecord: Sendable, Equatable {
    /// The entry as it was when it left.
    public var entry: FlowEntry
    /// Why it left.
    public var reason: FlowEndReason
    /// Its owner in the table (the engine: the peer handle that opened it).
    public var owner: UInt32 = 0

    public init(entry: FlowEntry, reason: FlowEndReason, owner: UInt32 = 0) {
        self.entry = entry
        self.reason = reason
        self.owner = owner
    }
}
