import Core

/// What an option's value must be (`OptionSpec.kind`): `ParsedOptions` converts it once, before
/// the command's body runs, so a wrong value is a usage error from one place and the body reads
/// a typed value.
enum OptionKind: Sendable, Equatable {
    /// No value (`--json`).
    case flag
    /// Any text (`--config PATH`, `--peer NAME`); what it must name is the body's to check.
    case text
    /// One of these words (`--detail metadata|full`).
    case choice([String])
    /// A positive integer (`--count N`).
    case positiveCount
    /// A finite duration (`--timeout 10s`), read as milliseconds.
    case duration
    /// `--since`: a duration back from now, `forever` or a date; read as epoch milliseconds
    /// (`Int64.min` for `forever`).
    case since
    /// A flow id (`--flow ID`).
    case flowID
}

/// An option a body reads, typed by what its value becomes: `opts[.json]` is a `Bool`,
/// `opts[.config]` a `String?`, `opts[.count]` an `Int?`. Its `OptionSpec` in the command table
/// says how the value is checked.
struct OptionKey<Value>: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

extension OptionKey where Value == Bool {
    static var json: Self { .init("--json") }
    static var local: Self { .init("--local") }
    static var names: Self { .init("--names") }
    static var blocked: Self { .init("--blocked") }
    static var lines: Self { .init("--lines") }
    static var view: Self { .init("--view") }
    static var psk: Self { .init("--psk") }
    static var keepClientKey: Self { .init("--keep-client-key") }
    static var qr: Self { .init("--qr") }
    static var dryRun: Self { .init("--dry-run") }
}

extension OptionKey where Value == String {
    static var config: Self { .init("--config") }
    static var peer: Self { .init("--peer") }
    static var policies: Self { .init("--policies") }
    static var gateway: Self { .init("--gateway") }
    static var ring: Self { .init("--ring") }
    static var png: Self { .init("--png") }
    static var output: Self { .init("-o") }
    static var filter: Self { .init("--filter") }
    static var detail: Self { .init("--detail") }
    static var tier: Self { .init("--tier") }
    static var ip: Self { .init("--ip") }
    static var dns: Self { .init("--dns") }
    static var endpoint: Self { .init("--endpoint") }
    static var allowedIPs: Self { .init("--allowed-ips") }
    static var expires: Self { .init("--expires") }
    static var subnet: Self { .init("--subnet") }
    static var subnet6: Self { .init("--subnet6") }
    static var wan: Self { .init("--wan") }
    static var listenPort: Self { .init("--listen-port") }
}

extension OptionKey where Value == Int {
    static var count: Self { .init("--count") }
}

extension OptionKey where Value == Int64 {
    /// Milliseconds.
    static var timeout: Self { .init("--timeout") }
    /// Epoch milliseconds (`Int64.min` for `forever`).
    static var since: Self { .init("--since") }
}

extension OptionKey where Value == UInt64 {
    static var flow: Self { .init("--flow") }
}

/// A command's words parsed against its table entry: names and values checked
/// (`Tunnelctl.checkOptions`: declared names, a value where one is due, the last of a repeated
/// option kept), each value converted to its option's kind, and the positional words in order
/// for the body to take. An unknown option, a missing or wrong value, a required option left
/// out: each is one usage error, from here, before the body runs.
struct ParsedOptions {
    /// A converted option value.
    enum Value: Equatable {
        case flag
        case text(String)
        case int(Int)
        case int64(Int64)
        case uint64(UInt64)
    }

    /// The command's path (`["capture", "extract"]`), for messages.
    let path: [String]
    private let values: [String: Value]
    /// The names the entry declares: a body reading another one is a table out of step with
    /// the code (an assertion in debug builds; the dispatcher would never let it through).
    private let declared: Set<String>
    private(set) var positionals: [String]

    /// Parses `words` (the subcommand word taken out) for the entry `spec` at `path`;
    /// `siblings` are the entry's fellow subcommands, named when an option belongs to one of them.
    init(_ words: [String], _ spec: Command, path: [String], siblings: [Command] = [],
         now: () -> Int64 = Tunnelctl.cliNow) throws {
        let words = try Tunnelctl.checkOptions(words, spec, path: path, siblings: siblings)
        self.path = path
        declared = Set(spec.options.map(\.name))
        var values: [String: Value] = [:]
        var positionals: [String] = []
        var i = 0
        while i < words.count {
            let w = words[i]
            i += 1
            if w == "--" {
                positionals += words[i...]
                break
            }
            guard Tunnelctl.isOption(w) else {
                positionals.append(w)
                continue
            }
            let (name, inline): (String, String?) = {
                guard let eq = w.firstIndex(of: "=") else { return (w, nil) }
                return (String(w[..<eq]), String(w[w.index(after: eq)...]))
            }()
            // checkOptions has refused unknown names and a value option without its value.
            guard let o = spec.option(name) else { preconditionFailure("an undeclared option \(name) passed the check") }
            guard o.takesValue else {
                values[o.name] = .flag
                continue
            }
            let text: String
            if let inline {
                text = inline
            } else {
                text = words[i]
                i += 1
            }
            values[o.name] = try Self.convert(text, o, path: path, now: now)
        }
        for o in spec.options where o.required && values[o.name] == nil {
            throw CLIError.usage("\(path.joined(separator: " ")) needs \(o.usageText)\(Self.hint(o.kind))")
        }
        self.values = values
        self.positionals = positionals
    }

    /// The one place an option's value is checked against its kind.
    static func convert(_ text: String, _ o: OptionSpec, path: [String], now: () -> Int64) throws -> Value {
        switch o.kind {
        case .flag, .text:
            return .text(text)
        case .choice(let words):
            guard words.contains(text) else { throw CLIError.usage("\(o.name) must be \(words.joined(separator: " or ")), not '\(text)'") }
            return .text(text)
        case .positiveCount:
            guard let n = Int(text), n > 0 else { throw CLIError.usage("\(o.name) needs a positive number, not '\(text)'") }
            return .int(n)
        case .duration:
            guard let ms = try? DurationFormat.parseFinite(text) else {
                throw CLIError.usage("\(o.name) needs a duration (500ms, 10s, 2m), not '\(text)'")
            }
            return .int64(ms)
        case .since:
            do {
                return .int64(try TimeText.since(text, now: now(), zone: Tunnelctl.cliTimeZone))
            } catch {
                throw CLIError.usage("\(o.name) \(error)")
            }
        case .flowID:
            guard let id = UInt64(text) else { throw CLIError.usage("\(path.joined(separator: " ")) needs \(o.usageText)\(hint(o.kind))") }
            return .uint64(id)
        }
    }

    /// What a missing or wrong value of this kind is told.
    static func hint(_ kind: OptionKind) -> String {
        kind == .flowID ? " (a number; tunnelctl watch and flows show ids)" : ""
    }

    private func value(_ name: String) -> Value? {
        assert(declared.contains(name), "option \(name) is read by the body but not declared in the command table")
        return values[name]
    }

    subscript(_ key: OptionKey<Bool>) -> Bool { value(key.name) != nil }

    subscript(_ key: OptionKey<String>) -> String? {
        guard case .text(let t)? = value(key.name) else { return nil }
        return t
    }

    subscript(_ key: OptionKey<Int>) -> Int? {
        guard case .int(let n)? = value(key.name) else { return nil }
        return n
    }

    subscript(_ key: OptionKey<Int64>) -> Int64? {
        guard case .int64(let n)? = value(key.name) else { return nil }
        return n
    }

    subscript(_ key: OptionKey<UInt64>) -> UInt64? {
        guard case .uint64(let n)? = value(key.name) else { return nil }
        return n
    }

    /// The next positional word; nil when none are left.
    mutating func next() -> String? { positionals.isEmpty ? nil : positionals.removeFirst() }

    /// The next positional word, left in place.
    var peek: String? { positionals.first }

    /// Fails with a usage error naming the first positional word left over, if any (one after
    /// `--` that looks like an option is named as an unknown option).
    func finish() throws {
        if let w = positionals.first {
            throw CLIError.usage(w.hasPrefix("-") ? "unknown option '\(w)'" : "unexpected argument '\(w)'")
        }
    }
}
