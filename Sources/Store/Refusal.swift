/// One coalesced row of `refusals`.
public struct Refusal: Hashable, Sendable {
    public var id: Int64
    public var kind: RefusalKind
    public var peer: String
    /// The refusing rule (`file:line` or `default`); empty for session refusals.
    public var rule: String
    /// Flow refusals: `PROTO DST:PORT` (see `Store.flowKey`); empty for session refusals.
    public var flowKey: String
    public var reason: String
    /// Session: the window's `allowed_until`; flow: start of the one-hour period.
    public var window: Int64
    /// Attempts coalesced into this row.
    public var count: Int64
    public var firstAt: Int64
    public var lastAt: Int64
}
