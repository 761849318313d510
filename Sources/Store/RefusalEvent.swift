import Core
/// One or more refusals to record, coalesced into `refusals` rows (docs/session.md):
///
/// - `session`: one row per peer and window, keyed by the window's `allowed_until`; every
///   refused handshake of that pause adds to its count and moves its `last_at`.
/// - `flow`: one row per (peer, rule, destination) per `Store.flowRefusalPeriodMs` (one hour),
///   so a client retrying a blocked service with fresh source ports stays one row per hour.
public struct RefusalEvent: Sendable {
    /// What kind of row this is.
    public var kind: RefusalKind
    /// The peer's name.
    public var peer: String
    /// Time of the (last) attempt, Unix epoch ms.
    public var at: Int64
    /// Attempts this event stands for (≥ 1; the daemon may pre-coalesce).
    public var count: Int64
    /// Why: the rule's reason text, or e.g. `free-limit pause` for a session refusal.
    public var reason: String
    /// The refusing rule (`file:line`, or `default`); empty for session refusals.
    public var rule: String
    /// Session refusals: the refused window's `allowed_until`. Unused for flows.
    public var windowEnd: Int64
    /// Flow refusals: protocol, destination address and port.
    public var proto: UInt8
    /// Destination address.
    public var dst: IPAddress
    /// Destination port (0 without ports).
    public var dstPort: UInt16
    /// Flow refusals: the host the flow was known by, when it was (docs/hosts.md).
    public var host: String? = nil
    /// Flow refusals: the decision as it was taken (generation, rule name, tier); nil for
    /// session refusals and the flow caps' `flow-limit`.
    public var decision: DecidedRule? = nil

    /// A refused handshake of `peer` during the pause after the window ending at `windowEnd`.
    public static func session(peer: String, windowEnd: Int64, at: Int64, reason: String = "free-limit pause",
                               count: Int64 = 1) -> RefusalEvent {
        RefusalEvent(kind: .session, peer: peer, at: at, count: count, reason: reason, rule: "", windowEnd: windowEnd,
                     proto: 0, dst: IPAddress(v4: 0), dstPort: 0)
    }

    /// A flow of `peer` refused by `rule`.
    public static func flow(peer: String, rule: String, reason: String, proto: UInt8, dst: IPAddress,
                            dstPort: UInt16, at: Int64, count: Int64 = 1, host: String? = nil) -> RefusalEvent {
        RefusalEvent(kind: .flow, peer: peer, at: at, count: count, reason: reason, rule: rule, windowEnd: 0,
                     proto: proto, dst: dst, dstPort: dstPort, host: host)
    }

    /// A flow of `peer` refused by `decision` (its place, or `default`, is the row's rule).
    public static func flow(peer: String, decision: DecidedRule, proto: UInt8, dst: IPAddress, dstPort: UInt16, at: Int64,
                            count: Int64 = 1, host: String? = nil) -> RefusalEvent {
        RefusalEvent(kind: .flow, peer: peer, at: at, count: count, reason: decision.reason, rule: decision.place ?? "default",
                     windowEnd: 0, proto: proto, dst: dst, dstPort: dstPort, host: host, decision: decision)
    }
}
