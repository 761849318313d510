import Core
/// A policy error as a reload reports it: `file:line:column: message` plus a hint
/// (docs/policy.md).
public struct PolicyDiagnostic: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The rule file.
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column.
    public var column: Int
    /// What is wrong.
    public var message: String
    /// What to do (e.g. `did you mean 'proto'?`), if anything.
    public var hint: String?

    /// A diagnostic from its fields.
    public init(file: String, line: Int, column: Int, message: String, hint: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.hint = hint
    }

    /// `file:line:column: message; hint` (`file: message; hint` for line 0: the whole file or directory).
    public var description: String {
        (line > 0 ? "\(file):\(line):\(column): " : "\(file): ") + message + (hint.map { "; \($0)" } ?? "")
    }
}
