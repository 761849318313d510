import Core
/// One rule of the running policy with its live hit counter (`tunnelctl policy show`).
public struct PolicyRuleStatus: Hashable, Sendable, Codable {
    /// The rule file (`policies/10-base.rules`); the daemon lists the implicit defaults with
    /// the file `<default>` and line 0.
    public var file: String
    /// 1-based line in the file.
    public var line: Int
    /// The rule as written (trimmed, without its comment).
    public var text: String
    /// The rule's `name`, if it has one.
    public var name: String?
    /// Flows this rule decided since the policy was loaded.
    public var hits: UInt64

    /// A rule status from its fields.
    public init(file: String, line: Int, text: String, name: String? = nil, hits: UInt64) {
        self.file = file
        self.line = line
        self.text = text
        self.name = name
        self.hits = hits
    }
}
