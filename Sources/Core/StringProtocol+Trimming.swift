extension StringProtocol {
    /// The text without leading and trailing spaces, tabs, CR, LF and byte-order marks: how the
    /// config file, the settings row and CLI values are read (the one trimming rule).
    public func trimmedSpaces() -> String {
        func isSpace(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\r" || c == "\n" || c == "\u{FEFF}" }
        var s = Substring(self)
        while let f = s.first, isSpace(f) { s = s.dropFirst() }
        while let l = s.last, isSpace(l) { s = s.dropLast() }
        return String(s)
    }
}
