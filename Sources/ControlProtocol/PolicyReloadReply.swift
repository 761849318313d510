import Core
/// `policyReload`: the outcome of re-reading the policy directory. On success `errors` is empty
/// and `policy` is the new one (generation bumped); on failure `errors` lists the problems and
/// `policy` is the old one, which keeps running (docs/policy.md).
public struct PolicyReloadReply: Hashable, Sendable, Codable {
    /// The policy running after the request.
    public var policy: PolicySummary
    /// Errors that made the reload fail (empty on success).
    public var errors: [PolicyDiagnostic]
    /// Warnings of a successful load (e.g. `host` rules not yet enforced by the data path).
    public var warnings: [PolicyDiagnostic]

    /// A reload outcome.
    public init(policy: PolicySummary, errors: [PolicyDiagnostic] = [], warnings: [PolicyDiagnostic] = []) {
        self.policy = policy
        self.errors = errors
        self.warnings = warnings
    }

    /// True when the new policy is running.
    public var succeeded: Bool { errors.isEmpty }
}
