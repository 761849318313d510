/// The policy decision recorded with an event.
public struct LiveVerdict: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Forwarded.
    public static let allow = LiveVerdict(rawValue: 0)
    /// Dropped silently.
    public static let block = LiveVerdict(rawValue: 1)
    /// Dropped with an ICMP unreachable or TCP RST back to the sender.
    public static let reject = LiveVerdict(rawValue: 2)

    public var description: String {
        switch self {
        case .allow: "allow"
        case .block: "block"
        case .reject: "reject"
        default: "verdict-\(rawValue)"
        }
    }
}
