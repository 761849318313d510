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
}
