import Core
/// One problem found in a config file: where it is, which key, what is wrong and what to do.
///
/// Printed as `FILE:LINE: KEY: MESSAGE; HINT`, for example
/// `etc/tunneld.conf:7: ListenPort: '5182o' is not a port; use a number from 1 to 65535`.
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

    /// A problem at `file:line`. Non-printable characters in every field (`key`, `message` and
    /// `hint` echo values from the file) are escaped (`printable(_:)`), so an error never writes control
    /// bytes or bidi overrides to the operator's terminal.
    public init(file: String, line: Int, key: String?, message: String, hint: String? = nil) {
        self.file = ConfigError.printable(file)
        self.line = line
        self.key = key.map(ConfigError.printable)
        self.message = ConfigError.printable(message)
        self.hint = hint.map(ConfigError.printable)
    }

    /// `text` with control, format (bidi overrides, zero-width …), line/paragraph separator and
    /// unassigned characters escaped: `\t`, `\x1B`, `\u{202E}`.
    public static func printable(_ text: String) -> String {
        func hidden(_ u: Unicode.Scalar) -> Bool {
            switch u.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate: return true
            default: return false
            }
        }
        guard text.unicodeScalars.contains(where: hidden) else { return text }
        var out = ""
        for u in text.unicodeScalars {
            if !hidden(u) {
                out.unicodeScalars.append(u)
            } else if u == "\t" {
                out += "\\t"
            } else if u.value < 0x100 {
                out += "\\x" + (u.value < 0x10 ? "0" : "") + String(u.value, radix: 16, uppercase: true)
            } else {
                out += "\\u{" + String(u.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
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
