import Core
/// The body of an error reply: a code to branch on and a message for a person.
public struct ControlErrorReply: Hashable, Sendable, Codable, Error, CustomStringConvertible {
    /// What kind of failure.
    public var code: ControlErrorCode
    /// What went wrong, in words (e.g. `no peer named 'bob'`).
    public var message: String

    /// An error reply.
    public init(code: ControlErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code))" }
}
