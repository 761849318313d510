/// One problem found in a config file: where it is, which key, what is wrong and what to do.
///
/// Printed as `FILE:LINE: KEY: MESSAGE; HINT`, for example
/// `etc/tunneld.conf:7: ListenPort: '5182o' is not a port; use a number from 1 to 65535`.
import Core
public struct ConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The config file as the operator named it.
    public var file: String
    /// 1-based line number; 0 when the problem concerns the whole file (a missing section or key).
    public var line: Int
    /// The key concerned, in its canonical spelling (`ListenPort`), or as written when unknown;
    /// nil for problems that are not about one key (a bad section header).
    public var key: String?
    /// What is wrong.
    public var message: String
    /// What to do about it, when there is something useful to say.
    public var hint: String?

    /// A problem at `file:line`.
    public init(file: String, line: Int, key: String?, message: String, hint: String? = nil) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        self.hint = hint
    }

    /// `FILE:LINE: KEY: MESSAGE; HINT` (line and key omitted when absent).
    public var description: String {
        var s = file
        if line > 0 { s += ":\(line)" }
        s += ": "
        if let key { s += key + ": " }
        s += message
        if let hint { s += "; " + hint }
        return s
    }
}
