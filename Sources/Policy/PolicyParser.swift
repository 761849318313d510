import Core
import Packet

/// Reads rule files into a `PolicySet` (docs/policy.md). It never stops at the first problem: every
/// bad line becomes an error diagnostic (`file:line:column`, one line, a did-you-mean hint for a
/// misspelt keyword) and parsing continues with the next line.
public enum PolicyParser {
    /// Words that may follow an action.
    public static let fieldKeywords = [
        "in", "out", "peer", "tier", "proto", "from", "to", "sport", "port", "host", "during", "name", "reason",
    ]
    /// Words that may start a line.
    public static let lineKeywords = ["allow", "block", "reject", "default"]
    /// The address word of `from` and `to`: the gateway's own tunnel addresses (its `Address`
    /// entries as /32 and /128 hosts), bound from the configuration, not written in the rules.
    public static let gatewayWord = "gateway"

    /// Parses `sources` in byte order of their names, then runs the semantic checks. A missing
    /// `default` is warned about only when there is at least one file. `host @PATH` lists are
    /// read through `hostLists`.
    public static func parse(_ sources: [PolicySource], hostLists: HostListReader = .files) -> PolicySet {
        let loader = HostListLoader(reader: hostLists)
        let ordered = sources.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        var rules = PolicyRules()
        rules.reserve(ordered.reduce(0) { n, s in n + 1 + s.text.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) } })
        var diagnostics: [PolicyDiagnostic] = []
        var defaults: [Direction: PolicyDefault] = [:]
        for source in ordered {
            // Rules keep their text as a range of the file's text (`PolicyRules`), so each
            // file's text is kept once, and only when a rule comes from it.
            let before = rules.count
            let textID = rules.addText(source.text)
            let bytes = Array(source.text.utf8)
            var lineNo = 0
            var start = 0
            while start <= bytes.count {
                lineNo += 1
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
                let line = bytes[start..<end]
                parseLine(line, file: source.name, lineNo: lineNo, textID: textID, rules: &rules, defaults: &defaults, diagnostics: &diagnostics, loader: loader)
                if end >= bytes.count { break }
                start = end + 1
            }
            if rules.count == before { rules.dropLastText() }
        }
        diagnostics += loader.diagnostics
        let firstFile = ordered.first?.name ?? "(no files)"
        let out = defaults[.out] ?? PolicyDefault(
            action: PolicySet.builtInDefaultOut, direction: .out, location: nil, text: "built-in default: allow outbound")
        let inn = defaults[.in] ?? PolicyDefault(
            action: PolicySet.builtInDefaultIn, direction: .in, location: nil, text: "built-in default: block inbound")
        if rules.isEmpty && defaults.isEmpty && !ordered.isEmpty {
            // Files, but nothing in them: say so once (a half-saved or emptied policy?).
            diagnostics.append(PolicyDiagnostic(.warning, SourceLocation(file: firstFile, line: 1),
                "no rules and no 'default' line in \(ordered.count == 1 ? "the file" : "any of the \(ordered.count) files"); "
                    + "every flow gets the built-in default (allow outbound, block inbound)"))
        } else if defaults[.out] == nil && !ordered.isEmpty {
            diagnostics.append(PolicyDiagnostic(.warning, SourceLocation(file: firstFile, line: 1),
                "no 'default' line; outbound flows that match no rule are allowed (add 'default allow' or 'default block')"))
        }
        if defaults[.in] == nil && !ordered.isEmpty && !(rules.isEmpty && defaults.isEmpty) {
            diagnostics.append(PolicyDiagnostic(.warning, SourceLocation(file: firstFile, line: 1),
                "no 'default in' line; inbound flows that match no rule are blocked (add 'default in block' or 'default in allow')"))
        }
        var set = PolicySet(rules: rules, defaultOut: out, defaultIn: inn, diagnostics: diagnostics, files: ordered.map(\.name))
        set.diagnostics += PolicyAnalysis.warnings(for: set.rules)
        return set
    }

    /// Reads `directory` (`PolicySource.loadDirectory`) and parses it: what `tunneld` loads and
    /// `tunnelctl policy check` checks. A directory without rule files is a warning (every flow
    /// then gets the built-in default), not an error.
    /// - Throws: `PolicyLoadError` when the directory or a file cannot be read.
    public static func parse(directory: String) throws -> PolicySet {
        var set = parse(try PolicySource.loadDirectory(directory))
        if set.files.isEmpty {
            set.diagnostics.append(PolicyDiagnostic(.warning, SourceLocation(file: directory, line: 0, column: 0),
                "no *.rules files; every flow gets the built-in default (allow outbound, block inbound)"))
        }
        return set
    }

    /// Parses the text of one file (a convenience for tests and tools).
    public static func parse(_ text: String, file: String = "test.rules", hostLists: HostListReader = .files) -> PolicySet {
        parse([PolicySource(name: file, text: text)], hostLists: hostLists)
    }

    struct Failure: Error {
        var column: Int
        var message: String
    }

    static func parseLine(
        _ line: ArraySlice<UInt8>, file: String, lineNo: Int, textID: Int32, rules: inout PolicyRules,
        defaults: inout [Direction: PolicyDefault], diagnostics: inout [PolicyDiagnostic], loader: HostListLoader
    ) {
        func fail(_ f: Failure) {
            diagnostics.append(PolicyDiagnostic(.error, SourceLocation(file: file, line: lineNo, column: f.column), f.message))
        }
        let tokens: [PolicyToken]
        let codeEnd: Int
        switch PolicyLexer.tokenize(line) {
        case .failure(let e): return fail(Failure(column: e.column, message: e.message))
        case .success(let r): (tokens, codeEnd) = r
        }
        guard let first = tokens.first else { return }
        // The rule's text: the line without its comment, trimmed. `line`'s indices are byte
        // offsets in the file, which is how `PolicyRules` keeps the text.
        var textStart = line.startIndex, textEnd = line.startIndex + codeEnd
        while textEnd > textStart, line[textEnd - 1] == UInt8(ascii: " ") || line[textEnd - 1] == UInt8(ascii: "\t") || line[textEnd - 1] == UInt8(ascii: "\r") {
            textEnd -= 1
        }
        while textStart < textEnd, line[textStart] == UInt8(ascii: " ") || line[textStart] == UInt8(ascii: "\t") { textStart += 1 }
        let location = SourceLocation(file: file, line: lineNo, column: first.column)
        var cursor = TokenCursor(tokens: tokens, lineLength: codeEnd)
        do {
            if first.kind == .word && first.text == "default" {
                cursor.advance()
                var direction = Direction.out
                if let t = cursor.peek, t.kind == .word, t.text == "in" || t.text == "out" {
                    direction = t.text == "in" ? .in : .out
                    cursor.advance()
                }
                let a = try cursor.word("an action after 'default' (allow, block or reject)")
                guard let action = Verdict(action: a.text) else {
                    throw Failure(column: a.column, message: "unknown action '\(a.text)'\(DidYouMean.suffix(a.text, ["allow", "block", "reject", "in", "out"])); 'default' takes [in|out] allow|block|reject")
                }
                if let extra = cursor.peek {
                    throw Failure(column: extra.column, message: "unexpected '\(extra.text)' after 'default \(direction == .in ? "in " : "")\(action)'; a default takes no match fields")
                }
                if let earlier = defaults[direction], let at = earlier.location {
                    throw Failure(column: first.column, message: "a second '\(direction == .in ? "default in" : "default")' line; the first is at \(at)")
                }
                let text = String(decoding: line[textStart..<textEnd], as: UTF8.self)
                defaults[direction] = PolicyDefault(action: action, direction: direction, location: location, text: text)
                return
            }
            guard first.kind == .word, let action = Verdict(action: first.text) else {
                let hint = first.kind == .word ? DidYouMean.suffix(first.text, lineKeywords) : ""
                throw Failure(column: first.column, message: "expected allow, block, reject or default, found '\(first.text)'\(hint)")
            }
            cursor.advance()
            var rule = PolicyRule(action: action, location: location, text: "")
            try parseFields(&cursor, into: &rule, file: file, loader: loader)
            rules.append(rule, text: textID, start: textStart, count: textEnd - textStart)
        } catch let f as Failure {
            fail(f)
        } catch {
            fail(Failure(column: first.column, message: "\(error)"))
        }
    }

    static func parseFields(_ c: inout TokenCursor, into rule: inout PolicyRule, file: String, loader: HostListLoader) throws {
        var seen: Set<String> = []
        while let t = c.peek {
            guard t.kind == .word else {
                throw Failure(column: t.column, message: t.kind == .comma ? "unexpected ','; lists go after a keyword, e.g. 'port 80,443'" : "unexpected string; quoted text goes after 'reason'")
            }
            let key = t.text
            guard fieldKeywords.contains(key) else {
                if Verdict(action: key) != nil {
                    throw Failure(column: t.column, message: "'\(key)' can only start a rule; one rule per line")
                }
                throw Failure(column: t.column, message: "unknown keyword '\(key)'\(DidYouMean.suffix(key, fieldKeywords))")
            }
            let dirKey = key == "in" || key == "out" ? "in/out" : key
            if seen.contains(dirKey) {
                throw Failure(column: t.column, message: key == "in" || key == "out" ? "direction given twice; a rule is either 'in' or 'out'" : "'\(key)' given twice; put the values in one list, e.g. '\(key) A, B'")
            }
            seen.insert(dirKey)
            c.advance()
            switch key {
            case "in": rule.direction = .in
            case "out": rule.direction = .out
            case "peer":
                var columns: [Int] = []
                rule.peers = try c.list("peer names") { tok in
                    guard isName(tok.text) else { throw Failure(column: tok.column, message: "'\(tok.text)' is not a peer name (letters, digits, '-', '_', '.')") }
                    columns.append(tok.column)
                    return tok.text
                }
                rule.peerColumns = columns
            case "tier":
                let w = try c.word("a tier name after 'tier' (free, premium or a [Tier NAME] of tunneld.conf)")
                guard let tier = PeerTier(keyword: w.text) else {
                    throw Failure(column: w.column, message: "'\(w.text)' is not a tier name\(DidYouMean.suffix(w.text, PeerTier.keywords)); \(PeerTier.nameRule)")
                }
                rule.tier = tier
            case "proto":
                var any = false
                var protos: [IPProtocol] = []
                _ = try c.list("protocols") { tok -> Int in
                    switch tok.text {
                    case "any": any = true
                    case "tcp": protos.append(.tcp)
                    case "udp": protos.append(.udp)
                    case "icmp": protos.append(.icmp)
                    case "icmpv6": protos.append(.icmpv6)
                    default:
                        throw Failure(column: tok.column, message: "unknown protocol '\(tok.text)'\(DidYouMean.suffix(tok.text, ["tcp", "udp", "icmp", "icmpv6", "any"])); use tcp, udp, icmp, icmpv6 or any")
                    }
                    return 0
                }
                var unique: [IPProtocol] = []
                for p in protos where !unique.contains(p) { unique.append(p) }
                rule.protocols = any ? [] : unique
            case "from", "to":
                // `gateway` stands for the gateway's own tunnel addresses, bound from the
                // configuration when the policy is compiled (PolicySet+Gateway.swift).
                var gateway = false
                let prefixes = try c.list("addresses, CIDR blocks or 'gateway'") { tok -> IPPrefix? in
                    if tok.text == gatewayWord { gateway = true; return nil }
                    return try parsePrefix(tok)
                }.compactMap { $0 }
                if key == "from" {
                    rule.sources = prefixes
                    rule.sourceGateway = gateway
                } else {
                    rule.destinations = prefixes
                    rule.destinationGateway = gateway
                }
            case "sport", "port":
                let ranges = try c.list("ports") { tok in try parsePortRange(tok) }
                if key == "sport" { rule.sourcePorts = ranges } else { rule.destinationPorts = ranges }
            case "host":
                // `@PATH` stands for the names of a list file.
                rule.hosts = try c.list("host patterns") { tok -> [HostPattern] in
                    guard tok.text.hasPrefix("@") else { return [try parseHostPattern(tok)] }
                    let path = String(tok.text.dropFirst())
                    guard !path.isEmpty else { throw Failure(column: tok.column, message: "'@' needs a file path, e.g. host @/etc/tunnelvision/blocklist.txt") }
                    switch loader.patterns(path, ruleFile: file) {
                    case .success(let patterns): return patterns
                    case .failure(let e): throw Failure(column: tok.column, message: e.message)
                    }
                }.flatMap { $0 }
            case "during":
                rule.window = try parseDuring(&c)
            case "name":
                let w = try c.word("a name after 'name'")
                guard isName(w.text) else { throw Failure(column: w.column, message: "'\(w.text)' is not a rule name (letters, digits, '-', '_', '.')") }
                rule.name = w.text
            case "reason":
                guard let s = c.peek else { throw Failure(column: c.endColumn, message: "expected a quoted text after 'reason', e.g. reason \"no SMTP\"") }
                guard s.kind == .string else {
                    throw Failure(column: s.column, message: "expected a quoted text after 'reason', e.g. reason \"no SMTP\"")
                }
                c.advance()
                rule.reason = s.text
            default: break
            }
        }
    }

    static func isName(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E
        }
    }

    static func parsePrefix(_ tok: PolicyToken) throws -> IPPrefix {
        var text = Substring(tok.text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw Failure(column: tok.column, message: "'\(tok.text)': missing ']'") }
            text = text[text.index(after: text.startIndex)..<close] + text[text.index(after: close)...]
        }
        if let slash = text.firstIndex(of: "/") {
            guard let addr = IPAddress(text[..<slash]) else {
                throw Failure(column: tok.column, message: "'\(text[..<slash])' is not an IPv4 or IPv6 address")
            }
            let lenText = text[text.index(after: slash)...]
            guard let len = Int(lenText), lenText.allSatisfy(\.isNumber), len >= 0, len <= addr.bitWidth else {
                throw Failure(column: tok.column + text.distance(from: text.startIndex, to: slash) + 1,
                    message: "'\(lenText)' is not a prefix length for \(addr.isIPv6 ? "IPv6 (0-128)" : "IPv4 (0-32)")")
            }
            let p = IPPrefix(addr, length: len)!
            return p
        }
        guard let addr = IPAddress(text) else {
            throw Failure(column: tok.column, message: "'\(tok.text)' is not an IPv4 or IPv6 address, a CIDR block or 'gateway'\(DidYouMean.suffix(tok.text, [gatewayWord]))")
        }
        return IPPrefix(addr, length: addr.bitWidth)!
    }

    static func parsePort(_ s: Substring, column: Int) throws -> UInt16 {
        guard !s.isEmpty, s.utf8.count <= 5, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let v = Int(s), v <= 65535 else {
            throw Failure(column: column, message: "'\(s)' is not a port (0-65535)")
        }
        return UInt16(v)
    }

    static func parsePortRange(_ tok: PolicyToken) throws -> PortRange {
        let t = Substring(tok.text)
        if let dash = t.firstIndex(of: "-") {
            let lo = try parsePort(t[..<dash], column: tok.column)
            let hiText = t[t.index(after: dash)...]
            let hi = try parsePort(hiText, column: tok.column + t.distance(from: t.startIndex, to: dash) + 1)
            guard lo <= hi else { throw Failure(column: tok.column, message: "port range '\(t)' is backwards; write \(hi)-\(lo)") }
            return PortRange(lo, hi)
        }
        let p = try parsePort(t, column: tok.column)
        return PortRange(p, p)
    }

    static func parseHostPattern(_ tok: PolicyToken) throws -> HostPattern {
        switch hostPattern(Substring(tok.text)) {
        case .success(let p): return p
        case .failure(let e): throw Failure(column: tok.column, message: e.message)
        }
    }

    /// `name` or `*.name` as a pattern: IDN converted to punycode, ASCII lower-cased, one
    /// trailing dot dropped (`HostNameText`).
    static func hostPattern(_ text: Substring) -> Result<HostPattern, HostNameError> {
        let wildcard = text.hasPrefix("*.")
        let name = wildcard ? text.dropFirst(2) : text
        guard !name.isEmpty, !name.contains("*") else {
            return .failure(HostNameError(message: "'\(text)' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)"))
        }
        switch HostNameText.ascii(name) {
        case .failure(let e):
            if name.utf8.allSatisfy({ $0 < 0x80 }) {
                return .failure(HostNameError(message: "'\(text)' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)"))
            }
            return .failure(e)
        case .success(let ascii):
            return .success(wildcard ? .subdomains(of: ascii) : .exact(ascii))
        }
    }

    static func parseClock(_ s: Substring, column: Int, allow24: Bool) throws -> Int {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            let h = Int(parts[0]), let m = Int(parts[1]), parts[0].allSatisfy(\.isNumber), parts[1].allSatisfy(\.isNumber),
            (h <= 23 && m <= 59) || (allow24 && h == 24 && m == 0)
        else {
            throw Failure(column: column, message: "'\(s)' is not a time of day (HH:MM, 00:00-23:59\(allow24 ? ", or 24:00 as an end" : ""))")
        }
        return h * 60 + m
    }

    static func parseDuring(_ c: inout TokenCursor) throws -> TimeWindow {
        let w = try c.word("a time window after 'during', e.g. during 22:00-07:00 mon-fri")
        let t = Substring(w.text)
        guard let dash = t.firstIndex(of: "-") else {
            throw Failure(column: w.column, message: "'\(t)' is not a time window; write HH:MM-HH:MM, e.g. during 22:00-07:00")
        }
        let start = try parseClock(t[..<dash], column: w.column, allow24: false)
        let endCol = w.column + t.distance(from: t.startIndex, to: dash) + 1
        let end = try parseClock(t[t.index(after: dash)...], column: endCol, allow24: true)
        guard start != end else {
            throw Failure(column: w.column, message: "time window '\(t)' is empty; use 00:00-24:00 for a whole day")
        }
        var days: UInt8 = 0x7F
        if let d = c.peek, d.kind == .word, dayIndex(Substring(d.text.prefix(3))) != nil {
            days = 0
            _ = try c.list("days") { tok -> Int in
                let s = Substring(tok.text)
                if let dash = s.firstIndex(of: "-") {
                    let a = try day(s[..<dash], column: tok.column)
                    let b = try day(s[s.index(after: dash)...], column: tok.column + s.distance(from: s.startIndex, to: dash) + 1)
                    var i = a
                    while true {
                        days |= 1 << i
                        if i == b { break }
                        i = (i + 1) % 7
                    }
                } else {
                    days |= 1 << (try day(s, column: tok.column))
                }
                return 0
            }
        }
        return TimeWindow(start: start, end: end == 1440 && start > 0 ? 1440 : end, days: days)
    }

    static func dayIndex(_ s: Substring) -> Int? { TimeWindow.dayNames.firstIndex(of: String(s)) }

    static func day(_ s: Substring, column: Int) throws -> Int {
        guard let d = dayIndex(s) else {
            throw Failure(column: column, message: "unknown day '\(s)'\(DidYouMean.suffix(String(s), TimeWindow.dayNames)); use mon tue wed thu fri sat sun, ranges (mon-fri) or lists (sat,sun)")
        }
        return d
    }
}

/// Walks a line's tokens.
struct TokenCursor {
    var tokens: [PolicyToken]
    var index = 0
    /// Column just after the line's code, for "expected … at end of line" errors.
    var endColumn: Int

    init(tokens: [PolicyToken], lineLength: Int) {
        self.tokens = tokens
        endColumn = lineLength + 1
    }

    var peek: PolicyToken? { index < tokens.count ? tokens[index] : nil }
    mutating func advance() { index += 1 }

    /// The next token, which must be a word.
    mutating func word(_ what: String) throws -> PolicyToken {
        guard let t = peek else { throw PolicyParser.Failure(column: endColumn, message: "expected \(what), found end of line") }
        guard t.kind == .word else { throw PolicyParser.Failure(column: t.column, message: "expected \(what), found '\(t.text)'") }
        advance()
        return t
    }

    /// `item (',' item)*`.
    mutating func list<T>(_ what: String, _ item: (PolicyToken) throws -> T) throws -> [T] {
        var out: [T] = []
        while true {
            let t = try word(what)
            if PolicyParser.fieldKeywords.contains(t.text), t.text != "any" {
                throw PolicyParser.Failure(column: t.column, message: "expected \(what), found keyword '\(t.text)'")
            }
            out.append(try item(t))
            guard let n = peek, n.kind == .comma else { break }
            advance()
        }
        return out
    }
}
