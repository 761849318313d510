import Core
extension StoreRecord {
    /// The family the record's losses are counted in (`tunnelctl status`, outage markers).
    public var family: RecordFamily {
        switch self {
        case .flowOpened, .flowUpdated, .flowClosed: return .flows
        case .refusal: return .refusals
        case .sessionOpened, .sessionClosed: return .sessions
        case .windowPut, .windowDeleted: return .windows
        case .marker: return .markers
        case .heartbeat: return .heartbeats
        }
    }
}
