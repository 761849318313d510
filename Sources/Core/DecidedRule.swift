/// A flow verdict as it was taken: the policy generation that decided it, the deciding rule's
/// place and name, the reason shown for it, and the peer's tier at that moment.
///
/// Flow and refusal rows store this value, never a rule index or a place to look up later: a
/// reload may put another rule at the same index or line, and the row must go on saying what
/// decided it then (docs/store.md: a record keeps what decided it).
public struct DecidedRule: Sendable, Hashable {
    /// The policy generation that decided; 0 when not recorded (rows stored before schema v8).
    public var generation: UInt64
    /// The deciding rule as `file:line`; nil when a default decided.
    public var place: String?
    /// The rule's `name`, when it has one.
    public var name: String?
    /// Why, in words: the rule's reason (else its name, else its text), or `default ACTION`.
    public var reason: String
    /// The tier the peer was in (nil: not known).
    public var tier: String?

    /// A decision taken by `generation`.
    public init(generation: UInt64, place: String?, name: String?, reason: String, tier: String?) {
        self.generation = generation
        self.place = place
        self.name = name
        self.reason = reason
        self.tier = tier
    }

    /// The reason text of a rule (`reason`, else `name`, else the rule as written).
    public static func reasonText(reason: String?, name: String?, text: String) -> String {
        reason ?? name ?? text
    }

    /// The reason text of a default verdict.
    public static func defaultReason(_ action: Verdict) -> String { "default \(action)" }
}
