/// The daemon's heartbeat row: when it started and when it last proved it was alive.
public struct DaemonState: Hashable, Sendable {
    public var pid: Int64
    public var startedAt: Int64
    public var heartbeatAt: Int64
}
