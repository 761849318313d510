import Core
/// The daemon's heartbeat row: when it started and when it last proved it was alive.
public struct DaemonState: Hashable, Sendable {
    /// Process id of the daemon.
    public var pid: Int64
    /// Start, Unix epoch ms.
    public var startedAt: Int64
    /// Last time the daemon proved it was alive, Unix epoch ms.
    public var heartbeatAt: Int64
    /// Records the daemon's store writer dropped (queue full) since it started, as of the heartbeat.
    public var droppedRecords: Int64
}
