import Core
import Store

/// What a shell may offer for one word of a `tunnelctl` command line: derived from the command
/// table's placeholders (`NAME`, `PATH`, `free|premium`, …), so the completion scripts
/// (`tunnelctl completion bash|zsh`) never list a command, option or value the table lacks.
enum CompletionWords: Equatable, Sendable {
    /// Nothing to offer (free text: a label, a FLOW, a duration).
    case none
    /// The configured peer names (`tunnelctl peers --names`, which reads only the configuration).
    case peers
    /// File names.
    case files
    /// Directory names.
    case directories
    /// The command names of the table (`help COMMAND`).
    case commands
    /// The subcommands of the previous positional word (`help policy SUBCOMMAND`).
    case subcommandsOfPrevious
    /// Fixed words (`free premium`, `metadata full`); `nospace` when the word is a prefix the user
    /// goes on typing (`flows=`).
    case words([String], nospace: Bool)

    /// The words for a placeholder of the table: an option's value name (`PATH`, `NAME`,
    /// `metadata|full`) or one positional slot of a synopsis (`PEER | 'FLOW'` is one slot with two
    /// alternatives, whose offers are merged).
    static func forPlaceholder(_ alternatives: [String]) -> CompletionWords {
        let kinds = alternatives.map(forSingle)
        return kinds.first { $0 != .none } ?? .none
    }

    private static func forSingle(_ p: String) -> CompletionWords {
        switch p {
        case "PATH", "FILE": return .files
        case "DIR": return .directories
        case "NAME", "PEER": return .peers
        // The built-in tiers; [Tier NAME] classes are the configuration's, unknown to the script.
        case "TIER": return .words(PeerTier.keywords, nospace: false)
        case "COMMAND": return .commands
        case "SUBCOMMAND": return .subcommandsOfPrevious
        case "KEY=VALUE": return .words(Settings.keys.map { $0.key + "=" }, nospace: true)
        default:
            // `free|premium`, `metadata|full`: lower-case alternatives are the literal words.
            let parts = p.split(separator: "|").map(String.init)
            if parts.count > 1, parts.allSatisfy({ $0.allSatisfy { $0.isLowercase || $0 == "-" } }) {
                return .words(parts, nospace: false)
            }
            return .none
        }
    }

    /// The positional slots of a synopsis: `NAME free|premium` → two slots; `PEER | 'FLOW'` → one
    /// slot with two alternatives; `[COMMAND [SUBCOMMAND]]` → two; `KEY=VALUE…` repeats (the last
    /// slot of `repeats` stands for every later word too).
    static func slots(_ synopsis: String) -> (slots: [CompletionWords], repeats: Bool) {
        var groups: [[String]] = []
        var joinNext = false
        var repeats = false
        for raw in synopsis.split(separator: " ") {
            if raw == "|" {
                joinNext = true
                continue
            }
            if raw.hasSuffix("…") { repeats = true }
            let word = raw.filter { !"[]'…".contains($0) }
            guard !word.isEmpty else { continue }
            if joinNext, !groups.isEmpty { groups[groups.count - 1].append(word) } else { groups.append([word]) }
            joinNext = false
        }
        return (groups.map(forPlaceholder), repeats)
    }
}

extension OptionSpec {
    /// What the shell offers for this option's value (nil for a flag).
    var completionWords: CompletionWords? { value.map { CompletionWords.forPlaceholder([$0]) } }
}
