/// History records the daemon lost for good, per family: dropped because the
/// store queue was full, or given up on after a write failed in a way retrying cannot fix, or
/// still unwritten at shutdown during an outage. A record that waited out an outage and was
/// written afterwards is not a drop.
public struct StoreDrops: Hashable, Sendable, Codable {
    public var flows: UInt64 = 0
    public var refusals: UInt64 = 0
    public var sessions: UInt64 = 0
    public var windows: UInt64 = 0
    public var markers: UInt64 = 0
    public var heartbeats: UInt64 = 0

    /// No drops.
    public init() {}

    /// The count of one family.
    public subscript(family: RecordFamily) -> UInt64 {
        get {
            switch family {
            case .flows: return flows
            case .refusals: return refusals
            case .sessions: return sessions
            case .windows: return windows
            case .markers: return markers
            case .heartbeats: return heartbeats
            }
        }
        set {
            switch family {
            case .flows: flows = newValue
            case .refusals: refusals = newValue
            case .sessions: sessions = newValue
            case .windows: windows = newValue
            case .markers: markers = newValue
            case .heartbeats: heartbeats = newValue
            }
        }
    }

    /// All families together.
    public var total: UInt64 { RecordFamily.allCases.reduce(0) { $0 &+ self[$1] } }

    /// Each family's count minus `earlier`'s (the drops of one window).
    public func since(_ earlier: StoreDrops) -> StoreDrops {
        var d = StoreDrops()
        for f in RecordFamily.allCases { d[f] = self[f] &- earlier[f] }
        return d
    }

    /// `736 flow records, 2 refusals dropped`, or `no records dropped`.
    public var sentence: String {
        let parts = RecordFamily.allCases.filter { self[$0] > 0 }.map { $0.describe(self[$0]) }
        return parts.isEmpty ? "no records dropped" : parts.joined(separator: ", ") + " dropped"
    }
}
