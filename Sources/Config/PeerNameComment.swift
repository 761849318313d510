import Core
/// The comments installers write above a `[Peer]` to name it: pivpn `### Client NAME` (older) and
/// `### begin NAME ###` (newer, closed by `### end NAME ###`), wg-easy `# Client: NAME (ID)`, and
/// `# Name = NAME`. One reader for the parser and the rewriter.
public enum PeerNameComment {
    /// The name a comment line gives (as written, maybe not a valid peer name), nil when the line
    /// is not a name comment. `line` is the whole line, leading spaces and `#` included.
    public static func name(in line: some StringProtocol) -> String? {
        var body = Substring(line.trimmedSpaces())
        guard body.hasPrefix("#") else { return nil }
        while body.first == "#" { body = body.dropFirst() }
        while body.last == "#" { body = body.dropLast() }
        body = Substring(String(body).trimmedSpaces())
        let lower = body.lowercased()
        var rest: Substring
        if lower.hasPrefix("client:") {
            rest = body.dropFirst(7)
            if let paren = rest.lastIndex(of: "("), rest.hasSuffix(")") { rest = rest[..<paren] }
        } else if lower.hasPrefix("client ") {
            rest = body.dropFirst(7)
        } else if lower.hasPrefix("begin ") {
            rest = body.dropFirst(6)
        } else if lower.hasPrefix("name"), let eq = body.firstIndex(of: "="),
                  body[..<eq].trimmedSpaces().lowercased() == "name" {
            rest = body[body.index(after: eq)...]
        } else {
            return nil
        }
        let name = String(rest).trimmedSpaces()
        return name.isEmpty ? nil : name
    }

    /// `text` as a peer name: characters outside `[A-Za-z0-9_.-]` become `-`, at most 32 of them;
    /// nil when nothing usable is left.
    public static func sanitized(_ text: String) -> String? {
        var out = String(text.map { c -> Character in
            c.isASCII && (c.isLetter || c.isNumber || "_.-".contains(c)) ? c : "-"
        }.prefix(32))
        while out.hasSuffix("-") { out.removeLast() }
        return out.isEmpty || out.allSatisfy({ $0 == "-" }) ? nil : out
    }
}
