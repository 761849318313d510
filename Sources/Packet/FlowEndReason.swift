import Core
/// Why a flow left the table.
public enum FlowEndReason: UInt8, Sendable, Equatable {
    /// Idle longer than its timeout (found by lookup, by the sweep, or when it was the LRU entry).
    case expired
    /// Evicted as least recently used to make room while still live (counted).
    case evicted
    /// Removed by the caller.
    case removed
}
