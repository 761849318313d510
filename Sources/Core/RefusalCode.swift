/// Why a peer's handshake was refused, as one stable number: the live ring's refusal events carry
/// it (`LiveRecord.detail`), `tunnelctl watch` prints its name. The names are the journal's
/// `REASON=` of a refusal event, so a line in `watch` and a journal entry say the same word.
public enum RefusalCode: UInt64, Sendable, CaseIterable, CustomStringConvertible {
    /// The daemon did not say (an older daemon, or a refusal outside the watchdog's rules).
    case unknown = 0
    /// Paused after a free-tier window's session time ran out.
    case freePause = 1
    /// Paused after the window's byte quota was used up.
    case quotaPause = 2
    /// `Disabled = true` or `tunnelctl peer disable`.
    case disabled = 3
    /// The peer's `Expires` date passed.
    case expired = 4

    public var name: String {
        switch self {
        case .unknown: "refused"
        case .freePause: "free-pause"
        case .quotaPause: "quota-pause"
        case .disabled: "disabled"
        case .expired: "expired"
        }
    }

    public var description: String { name }

    /// The name of code `raw` as a ring record carries it; a code this build does not know is
    /// `code N` (never a wrong name).
    public static func name(ofRaw raw: UInt64) -> String { RefusalCode(rawValue: raw)?.name ?? "code \(raw)" }
}
