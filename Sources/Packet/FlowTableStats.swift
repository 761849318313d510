import Core
/// Counters of a `FlowTable` since it was made.
public struct FlowTableStats: Sendable, Equatable {
    /// Flows opened.
    public var opened: UInt64 = 0
    /// Flows that expired (idle timeout).
    public var expired: UInt64 = 0
    /// Live flows evicted because the table was full.
    public var evicted: UInt64 = 0
    /// Flows removed by the caller.
    public var removed: UInt64 = 0
    /// New flows refused: the owner was at its cap or not allowed new flows.
    public var refusedCap: UInt64 = 0
    /// New flows refused: the table was full of other owners' live flows.
    public var refusedFull: UInt64 = 0

    /// Counters from their values (all zero by default).
    public init(opened: UInt64 = 0, expired: UInt64 = 0, evicted: UInt64 = 0, removed: UInt64 = 0) {
        self.opened = opened
        self.expired = expired
        self.evicted = evicted
        self.removed = removed
    }
}
