import Core
/// `policyShow`: the running policy's rules in evaluation order with hit counters.
public struct PolicyShowReply: Hashable, Sendable, Codable {
    /// The running policy.
    public var policy: PolicySummary
    /// Its rules, first-match order.
    public var rules: [PolicyRuleStatus]

    /// A reply from its fields.
    public init(policy: PolicySummary, rules: [PolicyRuleStatus]) {
        self.policy = policy
        self.rules = rules
    }
}
