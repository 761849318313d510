/// A value that does not parse: what is wrong with it and what to write instead. Config errors
/// prefix it with `file:line: Key:`, CLI errors with the option or setting name.
public struct ValueError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong (`'5x' is not a duration`).
    public var message: String
    /// What to write instead, when there is something to say.
    public var hint: String?

    /// An error from its parts.
    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    /// `message; hint`.
    public var description: String { hint.map { "\(message); \($0)" } ?? message }
}
