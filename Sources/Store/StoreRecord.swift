import Core
/// One write for `StoreWriter`. Plain values only, so submitting one copies (and retains the
/// strings of) a struct and allocates nothing.
public enum StoreRecord: Sendable {
    case flowOpened(FlowOpen)
    case flowUpdated(FlowUpdate)
    case flowClosed(FlowClose)
    case refusal(RefusalEvent)
    case sessionOpened(peer: String, at: Int64)
    case sessionClosed(SessionClose)
    case windowPut(SessionWindow)
    case windowDeleted(peer: String)
    case marker(MarkerInput)
    /// Moves the daemon's heartbeat and stores the writer's current drop count with it.
    case heartbeat(at: Int64)
}
