import Core
/// The shape of one entry of the command table (`CommandTable.swift`): what a command takes and
/// says about itself, and the body that runs it. The dispatcher (`Tunnelctl.run`) reads it to
/// find the subcommand, check the options (unknown ones are usage errors with a did-you-mean),
/// convert their values (`ParsedOptions`), answer `--help` / `help CMD` without touching the
/// config, the store or the daemon, and print the top-level usage.

/// One option: `--since DURATION|DATE`, a flag such as `--json`, optionally with a short alias.
struct OptionSpec: Sendable {
    /// `--since`, `-o`.
    let name: String
    /// Another spelling (`-n` for `--dry-run`); the dispatcher rewrites it to `name`.
    let alias: String?
    /// The value's name in the usage (`DURATION|DATE`); nil for a flag.
    let value: String?
    /// Shown without brackets in the usage (`capture extract --flow ID -o FILE`); missing, a
    /// usage error before the body runs.
    let required: Bool
    /// What the value must be; `.flag` without a value, `.text` unless given.
    let kind: OptionKind
    let help: String

    init(_ name: String, _ value: String? = nil, alias: String? = nil, required: Bool = false, kind: OptionKind? = nil, help: String) {
        self.name = name
        self.alias = alias
        self.value = value
        self.required = required
        self.kind = kind ?? (value == nil ? .flag : .text)
        self.help = help
    }

    var takesValue: Bool { value != nil }

    /// `--since DURATION|DATE`
    var usageText: String { value.map { "\(name) \($0)" } ?? name }

    /// `-n, --dry-run` / `--since DURATION|DATE` (the options list of `--help`).
    var listText: String { (alias.map { "\($0), " } ?? "") + usageText }

    static func json(_ doc: String) -> OptionSpec {
        OptionSpec("--json", help: "JSON instead of text (field names in \(doc))")
    }
    static let config = OptionSpec("--config", "PATH", help: "the tunneld configuration to read (default /etc/tunnelvision/tunneld.conf)")
    /// The history commands' scope with a shared store (docs/scale-out.md).
    static let historyScope = [
        OptionSpec("--gateway", "NAME", help: "with a shared store: only the rows this gateway (its GatewayName) recorded"),
        OptionSpec("--local", help: "with a shared store: this router's own store instead (rows not yet shipped included)"),
    ]
    /// `retention show`: this gateway's copy of the shared retention (Tunnelctl+SharedRetention.swift).
    static let retentionLocal = OptionSpec(
        "--local", help: "with a shared store: this gateway's own copy in state.db (the last shared retention tunneld read) instead")
    /// `session` and `explain PEER`: where the window is read (WindowSource).
    static let windowLocal = OptionSpec(
        "--local", help: "with a shared store: this router's own copy of the windows and tiers (one sync pass behind) instead")
}

/// One positional argument, for the `arguments:` list of `--help`.
struct ArgumentSpec: Sendable {
    let name: String
    let help: String
    init(_ name: String, _ help: String) {
        self.name = name
        self.help = help
    }
}

/// A command or a subcommand.
struct Command: Sendable {
    /// What a command does: its options already checked and typed (`opts[.json]`), its
    /// positional words taken with `opts.next()`.
    typealias Body = @Sendable (inout ParsedOptions, Console) throws -> ExitCode

    let name: String
    /// The positional part of the usage line (`[NAME]`, `PEER | 'FLOW'`); the options follow
    /// from `options`.
    let synopsis: String
    /// One line for the command lists.
    let summary: String
    let arguments: [ArgumentSpec]
    let options: [OptionSpec]
    /// The paragraphs of `--help` (blank-line separated; lines starting with two spaces are kept
    /// as they are, others are wrapped at 100 columns).
    let help: String
    let subcommands: [Command]
    /// nil for a group (the dispatcher runs the subcommand's body) and for `help` and `version`,
    /// which the dispatcher answers itself.
    let run: Body?

    init(_ name: String, _ synopsis: String = "", summary: String, arguments: [ArgumentSpec] = [],
         options: [OptionSpec] = [], help: String, subcommands: [Command] = [], run: Body? = nil) {
        self.name = name
        self.synopsis = synopsis
        self.summary = summary
        self.arguments = arguments
        self.options = options
        self.help = help
        self.subcommands = subcommands
        self.run = run
    }

    func subcommand(_ name: String) -> Command? { subcommands.first { $0.name == name } }

    /// The declared option called `word` (by name or alias).
    func option(_ word: String) -> OptionSpec? { options.first { $0.name == word || $0.alias == word } }

    /// Options this command takes: its own and, for a group, every subcommand's.
    var readableOptions: Set<String> {
        var names = Set(options.flatMap { [$0.name] + ($0.alias.map { [$0] } ?? []) })
        for s in subcommands { names.formUnion(s.readableOptions) }
        return names
    }

    /// Option words that take a value, with aliases (for separating options from positionals).
    var valueOptionWords: Set<String> {
        var words = Set(options.filter(\.takesValue).flatMap { [$0.name] + ($0.alias.map { [$0] } ?? []) })
        for s in subcommands { words.formUnion(s.valueOptionWords) }
        return words
    }
}

extension Tunnelctl {
    // MARK: usage and help text

    /// `tunnelctl audit mark LABEL [--detail TEXT] [--json] [--config PATH]`
    static func usageLine(_ path: [String], _ c: Command) -> String {
        var parts = ["tunnelctl"] + path
        if !c.synopsis.isEmpty { parts.append(c.synopsis) }
        for o in c.options { parts.append(o.required ? o.usageText : "[\(o.usageText)]") }
        return parts.joined(separator: " ")
    }

    /// `usage: …` with one line per subcommand for a group.
    static func usageText(_ path: [String]) -> String {
        guard let c = command(at: path) else { return "" }
        let lines = c.subcommands.isEmpty ? [usageLine(path, c)] : c.subcommands.map { usageLine(path + [$0.name], $0) }
        return "usage: " + lines.joined(separator: "\n       ")
    }

    /// The command or subcommand at `path` (`["policy", "test"]`).
    static func command(at path: [String]) -> Command? {
        guard let first = path.first, var c = commands.first(where: { $0.name == first }) else { return nil }
        for name in path.dropFirst() {
            guard let s = c.subcommand(name) else { return nil }
            c = s
        }
        return c
    }

    /// The whole `--help` text of the command at `path`.
    static func helpText(_ path: [String]) -> String {
        guard let c = command(at: path) else { return usage }
        var out = usageText(path) + "\n\n" + wrap(c.help)
        func list(_ title: String, _ rows: [(String, String)]) {
            guard !rows.isEmpty else { return }
            let width = rows.map(\.0.count).max()! + 2
            let indent = String(repeating: " ", count: 2 + width)
            out += "\n\n\(title):\n" + rows.map { name, help in
                let lines = wrap(help, width: max(40, 100 - indent.count)).split(separator: "\n")
                return "  " + name.rightPad(width) + lines.joined(separator: "\n" + indent)
            }.joined(separator: "\n")
        }
        if c.subcommands.isEmpty {
            list("arguments", c.arguments.map { ($0.name, $0.help) })
            list("options", c.options.map { ($0.listText, $0.help) })
        } else {
            list("subcommands", c.subcommands.map { ($0.name, $0.summary) })
            let p = path.joined(separator: " ")
            out += "\n\n" + wrap("'tunnelctl help \(p) SUBCOMMAND' or 'tunnelctl \(p) SUBCOMMAND --help' shows a subcommand's arguments and options.")
        }
        return out
    }

    /// `tunnelctl` / `tunnelctl help`: every command of the table with its summary.
    static var usage: String {
        let names = commands.map { c in c.subcommands.isEmpty ? c.name : c.name + " " + c.subcommands.map(\.name).joined(separator: "|") }
        let width = names.map(\.count).max()! + 2
        var s = "usage: tunnelctl COMMAND [SUBCOMMAND] [ARGUMENTS] [OPTIONS]\n\ncommands:\n"
        for (name, c) in zip(names, commands) {
            s += "  " + name.rightPad(width) + c.summary + "\n"
        }
        s += "\n" + wrap("""
            Options may come before or after the command; one given twice counts once, with its last value. Every read command takes --json and --config PATH \
            (default /etc/tunnelvision/tunneld.conf). 'tunnelctl help COMMAND [SUBCOMMAND]' or \
            'tunnelctl COMMAND --help' shows one command's arguments and options; 'tunnelctl --version' the version.

            Exit status: 0 ok, 1 the answer is "no" / not found / the configuration or the store cannot be read, \
            2 usage error, 3 tunneld is not running when the command needs it.
            """)
        return s
    }

    /// Paragraphs (blank-line separated) wrapped at `width`; lines starting with two spaces are
    /// kept as they are.
    static func wrap(_ text: String, width: Int = 100) -> String {
        text.components(separatedBy: "\n\n").map { paragraph -> String in
            var lines: [String] = []
            var current = ""
            func flush() {
                if !current.isEmpty { lines.append(current) }
                current = ""
            }
            for raw in paragraph.split(separator: "\n", omittingEmptySubsequences: false) {
                if raw.hasPrefix("  ") {
                    flush()
                    lines.append(String(raw))
                    continue
                }
                for word in raw.split(separator: " ") {
                    if current.isEmpty {
                        current = String(word)
                    } else if current.count + 1 + word.count <= width {
                        current += " " + word
                    } else {
                        lines.append(current)
                        current = String(word)
                    }
                }
            }
            flush()
            return lines.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    // MARK: options, driven by the table

    /// Checks `words` (after the command name; the subcommand, if any, included) against the
    /// options `c` declares, and rewrites aliases to their names. Unknown options, a value
    /// missing or a flag given a value are usage errors naming the declared options.
    ///
    /// An option given more than once counts once, with its last value (`--config` from a shell
    /// alias, then again on the line): only its last occurrence is kept, so every body reads one
    /// value and nothing is left over to be taken for an unknown option.
    static func checkOptions(_ words: [String], _ c: Command, path: [String], siblings: [Command]) throws -> [String] {
        // Positionals as one-word groups, options as their words; an earlier group of an option
        // seen again is emptied.
        var groups: [[String]] = []
        var lastGroup: [String: Int] = [:]
        func keep(_ name: String, _ group: [String]) {
            if let earlier = lastGroup[name] { groups[earlier] = [] }
            lastGroup[name] = groups.count
            groups.append(group)
        }
        var i = 0
        while i < words.count {
            let w = words[i]
            if w == "--" {
                groups.append(Array(words[i...]))
                break
            }
            guard isOption(w) else {
                groups.append([w])
                i += 1
                continue
            }
            let (word, inline): (String, String?) = {
                guard w.hasPrefix("--"), let eq = w.firstIndex(of: "=") else { return (w, nil) }
                return (String(w[..<eq]), String(w[w.index(after: eq)...]))
            }()
            let where_ = path.count > 1 ? " for '\(path.joined(separator: " "))'" : ""
            guard let o = c.option(word) else {
                let names = c.options.flatMap { [$0.name] + ($0.alias.map { [$0] } ?? []) }
                var hint = DidYouMean.suffix(word, names)
                if hint.isEmpty, let s = siblings.first(where: { $0.option(word) != nil }) {
                    hint = " (\(word) does not apply here; it is an option of '\(path.dropLast().joined(separator: " ")) \(s.name)')"
                }
                throw CLIError.usage("unknown option '\(word)'\(where_)\(hint)\n\(usageText(path))")
            }
            if o.takesValue {
                if let inline {
                    keep(o.name, [o.name + "=" + inline])
                } else {
                    guard i + 1 < words.count else {
                        throw CLIError.usage("\(o.name) needs a value (\(o.usageText))\n\(usageText(path))")
                    }
                    keep(o.name, [o.name, words[i + 1]])
                    i += 1
                }
            } else {
                if inline != nil { throw CLIError.usage("\(o.name) takes no value\n\(usageText(path))") }
                keep(o.name, [o.name])
            }
            i += 1
        }
        return groups.flatMap { $0 }
    }

    /// The first positional word of `words`, skipping options and their values.
    static func firstPositional(_ words: [String], valueOptions: Set<String>) -> (index: Int, word: String)? {
        var i = 0
        while i < words.count {
            let w = words[i]
            if w == "--" { return i + 1 < words.count ? (i + 1, words[i + 1]) : nil }
            if isOption(w) {
                i += valueOptions.contains(w) ? 2 : 1
                continue
            }
            return (i, w)
        }
        return nil
    }

    /// The positional words, without options and their values.
    static func positionals(_ words: [String], valueOptions: Set<String>) -> [String] {
        var rest = words
        var out: [String] = []
        while let p = firstPositional(rest, valueOptions: valueOptions) {
            out.append(p.word)
            rest.removeSubrange(...p.index)
        }
        return out
    }

    /// Whether `-h` or `--help` is among the words (before a `--`).
    static func asksForHelp(_ words: [String]) -> Bool {
        for w in words {
            if w == "--" { return false }
            if w == "-h" || w == "--help" { return true }
        }
        return false
    }
}
