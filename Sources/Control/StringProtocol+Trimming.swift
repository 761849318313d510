import Core
extension String {
    /// The text without leading and trailing whitespace and newlines.
    func trimmingNewlinesAndSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
