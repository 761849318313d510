import Core
/// The result of decoding the settings row: the settings, and what was not taken from the row.
public struct SettingsDecoding: Hashable, Sendable {
    /// Why a field took its factory value.
    public enum Reason: Error, Hashable, Sendable, CustomStringConvertible {
        /// Not in the row (or no row / an empty row).
        case missing
        /// Present with the wrong JSON type (`found` is the type seen).
        case wrongType(found: String)
        /// Right type but not a valid value (`message` says why).
        case invalid(value: String, message: String)

        public var description: String {
            switch self {
            case .missing: return "missing"
            case let .wrongType(found): return "wrong type (\(found))"
            case let .invalid(value, message): return "invalid value '\(value)': \(message)"
            }
        }
    }

    /// The decoded settings (factory values where the row said nothing usable).
    public var settings: Settings
    /// Fields that took their factory value, by JSON path (`retention.flows`), in key order.
    public var defaulted: [(path: String, reason: Reason)]
    /// Fields in the row this build does not know (ignored; kept out of the next write).
    public var unknown: [String]
    /// True when there was no row or the row was empty.
    public var wasEmpty: Bool

    public static func == (a: SettingsDecoding, b: SettingsDecoding) -> Bool {
        a.settings == b.settings && a.unknown == b.unknown && a.wasEmpty == b.wasEmpty
            && a.defaulted.map(\.path) == b.defaulted.map(\.path) && a.defaulted.map(\.reason) == b.defaulted.map(\.reason)
    }

    public func hash(into h: inout Hasher) {
        h.combine(settings)
        h.combine(unknown)
        for d in defaulted { h.combine(d.path); h.combine(d.reason) }
    }

    /// The paths of `defaulted`.
    public var defaultedPaths: [String] { defaulted.map(\.path) }
}
