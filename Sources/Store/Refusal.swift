import Core
/// One coalesced row of `refusals`.
public struct Refusal: Hashable, Sendable {
    /// Row id (for flows: the daemon's flow id).
    public var id: Int64
    /// What kind of row this is.
    public var kind: RefusalKind
    /// The peer's name.
    public var peer: String
    /// The refusing rule (`file:line` or `default`); empty for session refusals.
    public var rule: String
    /// Flow refusals: `PROTO DST:PORT` (see `Store.flowKey`); empty for session refusals.
    public var flowKey: String
    /// Why (close reason, refusal reason, or session end reason).
    public var reason: String
    /// Session: the window's `allowed_until`; flow: start of the one-hour period.
    public var window: Int64
    /// Attempts coalesced into this row.
    public var count: Int64
    /// First attempt, Unix epoch ms.
    public var firstAt: Int64
    /// Latest attempt, Unix epoch ms.
    public var lastAt: Int64
    /// Flow refusals: the host the flow was known by (SNI, HTTP Host, QUIC SNI or the DNS name of
    /// its destination) — the newest one named in this row's attempts; empty when none was.
    public var host: String = ""
    /// Flow refusals: the decision as it was taken (generation, rule name, tier); nil for
    /// session rows, `flow-limit` rows and rows stored before decisions were recorded.
    public var decision: DecidedRule? = nil
}
