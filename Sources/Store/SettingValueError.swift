import Core
/// A setting value or key a person typed that cannot be used (`retention set flows=7x`).
public struct SettingValueError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key, when known (`flows`).
    public var key: String?
    /// The text that was refused.
    public var value: String
    /// What is wrong and what would be accepted.
    public var message: String

    /// An error for `value` (of `key`).
    public init(key: String? = nil, value: String, message: String) {
        self.key = key
        self.value = value
        self.message = message
    }

    public var description: String {
        // Core's value errors quote the value already (`unknown unit 'x' in '7x'`).
        if let key { return message.contains("'\(value)'") ? "\(key): \(message)" : "\(key)=\(value): \(message)" }
        return "'\(value)': \(message)"
    }
}
