import Core
/// An error or warning found while reading rule files, with its place.
public struct PolicyDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// `error` stops a policy from loading; `warning` does not.
    public enum Severity: String, Sendable, Hashable {
        case error, warning
    }
    public var severity: Severity
    public var location: SourceLocation
    /// One line: what is wrong, and a hint when there is one.
    public var message: String

    public init(_ severity: Severity, _ location: SourceLocation, _ message: String) {
        self.severity = severity
        self.location = location
        self.message = message
    }

    /// `file:line:column: error: message`; `file: warning: message` for line 0 (the whole
    /// file or directory).
    public var description: String {
        guard location.line > 0 else { return "\(location.file): \(severity.rawValue): \(message)" }
        return "\(location.file):\(location.line):\(location.column): \(severity.rawValue): \(message)"
    }
}

