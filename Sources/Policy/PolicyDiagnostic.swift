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

/// ", did you mean 'x'?" when one candidate is within edit distance 2 of `word`, else "".
func didYouMean(_ word: String, _ candidates: [String]) -> String {
    func distance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var prev = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var cur = [i + 1]
            for (j, cb) in b.enumerated() {
                cur.append(Swift.min(prev[j + 1] + 1, cur[j] + 1, prev[j] + (ca == cb ? 0 : 1)))
            }
            prev = cur
        }
        return prev[b.count]
    }
    guard word.utf8.count < 40 else { return "" }
    let w = Array(word.lowercased().utf8)
    var best: (String, Int)? = nil
    for c in candidates {
        let d = distance(w, Array(c.utf8))
        if d <= 2 && d < w.count, best == nil || d < best!.1 { best = (c, d) }
    }
    return best.map { ", did you mean '\($0.0)'?" } ?? ""
}
