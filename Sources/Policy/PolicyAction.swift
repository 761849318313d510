/// What a rule (or a default) does with a flow (DESIGN.md §5).
public enum PolicyAction: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Let the flow through.
    case allow
    /// Drop silently.
    case block
    /// Drop, and answer the peer with a TCP RST or an ICMP unreachable so it fails fast.
    case reject

    /// `allow`, `block` or `reject`.
    public var description: String {
        switch self {
        case .allow: return "allow"
        case .block: return "block"
        case .reject: return "reject"
        }
    }

    /// Parses `allow`, `block` or `reject`.
    public init?(keyword: String) {
        switch keyword {
        case "allow": self = .allow
        case "block": self = .block
        case "reject": self = .reject
        default: return nil
        }
    }
}

/// Which side originated a flow: `out` = a peer started it (the common case), `in` = it was
/// started towards a peer.
public enum PolicyDirection: UInt8, Sendable, Hashable, CustomStringConvertible {
    case out = 0
    case `in` = 1

    /// `out` or `in`.
    public var description: String { self == .out ? "out" : "in" }
}

/// A peer's service tier (DESIGN.md §6).
public enum PolicyTier: UInt8, Sendable, Hashable, CustomStringConvertible {
    case free = 1
    case premium = 2

    /// `free` or `premium`.
    public var description: String { self == .free ? "free" : "premium" }

    /// Parses `free` or `premium`.
    public init?(keyword: String) {
        switch keyword {
        case "free": self = .free
        case "premium": self = .premium
        default: return nil
        }
    }
}
