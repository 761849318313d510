import Core
/// One row of `flows`, as the CLI reads it.
public struct Flow: Hashable, Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// IP protocol number.
    public var proto: UInt8
    /// Source address (the peer's side).
    public var src: IPAddress
    /// Source port (0 without ports).
    public var srcPort: UInt16
    /// Destination address.
    public var dst: IPAddress
    /// Destination port (0 without ports).
    public var dstPort: UInt16
    /// The peer's name.
    public var peer: String
    /// Host name learned for the flow, if any.
    public var host: String?
    /// First packet, Unix epoch ms.
    public var firstSeen: Int64
    /// Latest packet, Unix epoch ms.
    public var lastSeen: Int64
    /// Byte and packet totals.
    public var counters: FlowCounters
    /// The verdict in force.
    public var verdict: Verdict
    /// The deciding rule (`file:line`); nil/empty for the default or a session refusal.
    public var rule: String?
    /// Capture location of the first packet, if captured.
    public var capture: CaptureLocation?
    /// End of the flow; nil while live.
    public var closedAt: Int64?
    /// Why it ended; nil while live.
    public var closeReason: String?
    /// The decision as it was taken (generation, rule name, reason, tier); nil for a row stored
    /// before decisions were recorded, or not decided yet.
    public var decision: DecidedRule? = nil
}

extension DecidedRule {
    /// A decision read back from a row's columns; nil when the row recorded none (generation 0
    /// or NULL: stored before decisions were kept, or a session or `flow-limit` row).
    public static func stored(generation: Int64, place: String?, name: String?, reason: String, tier: String?) -> DecidedRule? {
        guard generation > 0 else { return nil }
        return DecidedRule(generation: UInt64(generation), place: place?.isEmpty == true ? nil : place, name: name, reason: reason,
                           tier: tier)
    }
}
