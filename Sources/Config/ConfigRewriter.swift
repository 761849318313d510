import Core

/// Edits the text of `tunneld.conf` the way a careful person would: append a `[Peer]`,
/// remove one, rename one, set or clear a key in a peer's section. Pure: text in, text out. Every
/// byte outside the lines it touches is kept — comments, blank lines, CRLF or LF endings, odd
/// spacing, a missing final newline. Peers are found by the parser's naming rule (`Name`, else a
/// name comment above the header, `PeerNameComment`, else `PeerName.fromKey`).
public enum ConfigRewriter {
    /// One line: its text and its terminator (`"\n"`, `"\r\n"`, or `""` for a last line without one).
    struct Line {
        var body: String
        var eol: String
    }

    /// A `[Peer]` section as found in the lines.
    struct PeerBlock {
        var name: String
        var header: Int
        /// One past the last line that is a key (the section's trailing blank and comment lines
        /// belong to whatever follows).
        var end: Int
        /// Index of the name comment above the header, if the name came from one.
        var comment: Int?
        /// Key lines: canonical lower-cased key and line index.
        var keys: [(key: String, line: Int)]
    }

    static func lines(_ text: String) -> [Line] {
        var out: [Line] = []
        var current = ""
        for u in text.unicodeScalars {
            if u == "\n" {
                if current.unicodeScalars.last == "\r" {
                    current.unicodeScalars.removeLast()
                    out.append(Line(body: current, eol: "\r\n"))
                } else {
                    out.append(Line(body: current, eol: "\n"))
                }
                current = ""
            } else {
                current.unicodeScalars.append(u)
            }
        }
        if !current.isEmpty { out.append(Line(body: current, eol: "")) }
        return out
    }

    static func join(_ lines: [Line]) -> String { lines.map { $0.body + $0.eol }.joined() }

    /// `"\r\n"` when most lines end so, else `"\n"`.
    static func dominantEOL(_ lines: [Line]) -> String {
        let crlf = lines.filter { $0.eol == "\r\n" }.count
        let lf = lines.filter { $0.eol == "\n" }.count
        return crlf > lf ? "\r\n" : "\n"
    }

    /// The text of a line without its comment, trimmed.
    static func content(_ body: String) -> String {
        var s = Substring(body)
        if let hash = s.firstIndex(of: "#") { s = s[..<hash] }
        return s.trimmedSpaces()
    }

    static func isComment(_ body: String) -> Bool { body.trimmedSpaces().hasPrefix("#") }
    static func isBlank(_ body: String) -> Bool { body.trimmedSpaces().isEmpty }

    /// Every `[Peer]` block with its name, the same way the parser names it.
    static func peers(_ lines: [Line]) -> [PeerBlock] {
        var blocks: [PeerBlock] = []
        var pending: (String, Int)?
        var inPeer = false
        for (i, line) in lines.enumerated() {
            if let n = PeerNameComment.name(in: line.body) { pending = (n, i); continue }
            let c = content(line.body)
            if c.isEmpty { continue }
            if c.hasPrefix("[") {
                inPeer = c.dropFirst().dropLast().trimmedSpaces().lowercased() == "peer"
                if inPeer {
                    blocks.append(PeerBlock(name: "", header: i, end: i + 1, comment: pending?.1, keys: []))
                    if let (n, _) = pending { blocks[blocks.count - 1].name = PeerNameComment.sanitized(n) ?? "" }
                }
                pending = nil
                continue
            }
            pending = nil
            guard inPeer, let eq = c.firstIndex(of: "=") else { continue }
            let key = c[..<eq].trimmedSpaces().lowercased()
            let value = c[c.index(after: eq)...].trimmedSpaces()
            blocks[blocks.count - 1].keys.append((key, i))
            blocks[blocks.count - 1].end = i + 1
            if key == "name" { blocks[blocks.count - 1].name = value; blocks[blocks.count - 1].comment = nil }
        }
        for i in blocks.indices where blocks[i].name.isEmpty {
            if let l = blocks[i].keys.first(where: { $0.key == "publickey" })?.line,
               let eq = content(lines[l].body).firstIndex(of: "=")
            {
                let c = content(lines[l].body)
                blocks[i].name = PeerName.fromKey(c[c.index(after: eq)...].trimmedSpaces())
            }
        }
        return blocks
    }

    static func find(_ name: String, _ lines: [Line]) throws(ValueError) -> PeerBlock {
        guard let b = peers(lines).first(where: { $0.name == name }) else {
            throw ValueError("no [Peer] named '\(name)' in the file", hint: "tunnelctl peer list shows the names")
        }
        return b
    }

    /// `text` with a `[Peer]` section appended: a blank line first unless the file ends with one,
    /// the file's own line ending, a final newline added to the old last line if it lacked one.
    /// `comment` lines (without `#`) go above the header.
    public static func appendPeer(_ text: String, entries: [(key: String, value: String)], comment: [String] = []) -> String {
        var ls = lines(text)
        let eol = dominantEOL(ls)
        if let last = ls.indices.last, ls[last].eol.isEmpty { ls[last].eol = eol }
        if let last = ls.last, !isBlank(last.body) { ls.append(Line(body: "", eol: eol)) }
        for c in comment { ls.append(Line(body: "# " + c, eol: eol)) }
        ls.append(Line(body: "[Peer]", eol: eol))
        for e in entries { ls.append(Line(body: "\(e.key) = \(e.value)", eol: eol)) }
        return join(ls)
    }

    /// `text` without the `[Peer]` named `name`: its header, keys, the comments right above it
    /// (its name comment and any touching the header), a pivpn `### end NAME ###` after it, and
    /// one of the blank lines that separated it.
    public static func removePeer(_ text: String, named name: String) throws(ValueError) -> String {
        var ls = lines(text)
        let b = try find(name, ls)
        var start = b.comment ?? b.header
        while start > 0, isComment(ls[start - 1].body), PeerNameComment.name(in: ls[start - 1].body) == nil,
              !ls[start - 1].body.lowercased().contains("end ") { start -= 1 }
        var end = b.end
        if end < ls.count, isComment(ls[end].body), ls[end].body.lowercased().contains("end \(name.lowercased())") { end += 1 }
        let blankBefore = start == 0 || isBlank(ls[start - 1].body)
        if end < ls.count, isBlank(ls[end].body), blankBefore {
            end += 1
        } else if end == ls.count, start > 0, isBlank(ls[start - 1].body) {
            start -= 1
        }
        let keepNoFinalNewline = end == ls.count && ls.last?.eol == ""
        ls.removeSubrange(start..<end)
        if keepNoFinalNewline, let last = ls.indices.last { ls[last].eol = "" }
        return join(ls)
    }

    /// `text` with the value of `key` in the peer's section replaced (the spacing around `=` and a
    /// trailing comment kept), added after the section's last key when absent, or removed when
    /// `value` is nil.
    public static func setKey(_ text: String, peer name: String, key: String, value: String?) throws(ValueError) -> String {
        var ls = lines(text)
        let b = try find(name, ls)
        if let l = b.keys.last(where: { $0.key == key.lowercased() })?.line {
            guard let value else {
                let eol = ls[l].eol
                ls.remove(at: l)
                if eol.isEmpty, l == ls.count, let last = ls.indices.last { ls[last].eol = "" }
                return join(ls)
            }
            ls[l].body = replacingValue(ls[l].body, with: value)
            return join(ls)
        }
        guard let value else { return text }
        let after = (b.keys.last?.line ?? b.header)
        let eol = dominantEOL(ls)
        var line = Line(body: "\(key) = \(value)", eol: ls[after].eol)
        if ls[after].eol.isEmpty { ls[after].eol = eol; line.eol = "" }
        ls.insert(line, at: after + 1)
        return join(ls)
    }

    /// `text` with the peer `old` called `new`: its `Name` line changed, or one added when the name
    /// came from a comment or its key (the comment stays; `Name` wins).
    public static func renamePeer(_ text: String, from old: String, to new: String) throws(ValueError) -> String {
        try setKey(text, peer: old, key: "Name", value: new)
    }

    /// `body` (`Key = value  # comment`) with the value replaced.
    static func replacingValue(_ body: String, with value: String) -> String {
        guard let eq = body.firstIndex(of: "=") else { return body }
        var valueStart = body.index(after: eq)
        while valueStart < body.endIndex, body[valueStart] == " " || body[valueStart] == "\t" {
            valueStart = body.index(after: valueStart)
        }
        var valueEnd = body[valueStart...].firstIndex(of: "#") ?? body.endIndex
        while valueEnd > valueStart, body[body.index(before: valueEnd)] == " " || body[body.index(before: valueEnd)] == "\t" {
            valueEnd = body.index(before: valueEnd)
        }
        return String(body[..<valueStart]) + value + String(body[valueEnd...])
    }
}
