import Core
/// The running policy: its generation (bumped by every successful reload, docs/policy.md) and
/// what it was built from.
public struct PolicySummary: Hashable, Sendable, Codable {
    /// Generation number of the running policy.
    public var generation: UInt64
    /// The rule files loaded, in evaluation order.
    public var files: [String]
    /// Number of rules.
    public var ruleCount: Int
    /// When it was loaded (epoch ms).
    public var loadedAtMs: Int64

    /// A summary from its fields.
    public init(generation: UInt64, files: [String], ruleCount: Int, loadedAtMs: Int64) {
        self.generation = generation
        self.files = files
        self.ruleCount = ruleCount
        self.loadedAtMs = loadedAtMs
    }
}
