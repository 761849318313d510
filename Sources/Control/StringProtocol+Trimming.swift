import Core
extension StringProtocol {
    /// The text without leading and trailing spaces, tabs, carriage returns and byte-order marks.
    func trimmedSpaces() -> String {
        func isSpace(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\r" || c == "\u{FEFF}" }
        var s = Substring(self)
        while let f = s.first, isSpace(f) { s = s.dropFirst() }
        while let l = s.last, isSpace(l) { s = s.dropLast() }
        return String(s)
    }
}

extension String {
    /// The text without leading and trailing whitespace and newlines.
    func trimmingNewlinesAndSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
