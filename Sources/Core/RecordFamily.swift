/// The families of history the daemon writes to the store (docs/store.md), as losses are
/// counted and shown: `flows` (opened, updated, closed), `refusals`, `sessions` (opened,
/// closed), `windows` (session windows put or deleted), `markers`, `heartbeats`.
public enum RecordFamily: String, Sendable, CaseIterable, Codable {
    case flows, refusals, sessions, windows, markers, heartbeats

    /// The family in a sentence, for `count` records: `736 flow records`, `1 refusal`.
    public func describe(_ count: UInt64) -> String {
        let one = count == 1
        switch self {
        case .flows: return "\(count) flow record\(one ? "" : "s")"
        case .refusals: return "\(count) refusal\(one ? "" : "s")"
        case .sessions: return "\(count) session record\(one ? "" : "s")"
        case .windows: return "\(count) session-window record\(one ? "" : "s")"
        case .markers: return "\(count) marker\(one ? "" : "s")"
        case .heartbeats: return "\(count) heartbeat\(one ? "" : "s")"
        }
    }
}
