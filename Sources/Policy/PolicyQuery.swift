import Core
import Packet

/// An interned peer name: `CompiledPolicy.peerID(named:)` turns a name into one once (when the
/// peer is configured), so the data path never passes strings. Names no rule mentions share
/// `unknown`.
public struct PolicyPeerID: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// A peer no rule names (or no peer at all).
    public static let unknown = PolicyPeerID(rawValue: 0)
}

/// A flow to decide, as the data path sees it on the flow's first packet.
public struct PolicyQuery: Sendable {
    /// `out` = started by a peer.
    public var direction: Direction
    public var proto: IPProtocol
    public var source: IPAddress
    public var destination: IPAddress
    /// Ignored unless `proto` is TCP or UDP.
    public var sourcePort: UInt16
    /// Ignored unless `proto` is TCP or UDP.
    public var destinationPort: UInt16
    public var peer: PolicyPeerID
    /// nil when the peer's tier is not known: then `tier` rules do not match.
    public var tier: PeerTier?
    /// The host name learned for the flow; nil when none is known, and then `host` rules do not match.
    public var host: String?
    /// Local minute of the week (0 = Monday 00:00; see `PolicyClock`).
    public var minuteOfWeek: Int

    public init(
        direction: Direction = .out, proto: IPProtocol, source: IPAddress, destination: IPAddress,
        sourcePort: UInt16 = 0, destinationPort: UInt16 = 0, peer: PolicyPeerID = .unknown, tier: PeerTier? = nil,
        host: String? = nil, minuteOfWeek: Int = 0
    ) {
        self.direction = direction
        self.proto = proto
        self.source = source
        self.destination = destination
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.peer = peer
        self.tier = tier
        self.host = host
        self.minuteOfWeek = minuteOfWeek
    }
}

/// The decision for a flow: the action and which rule gave it (or the default).
public struct PolicyVerdict: Hashable, Sendable {
    public var action: Verdict
    /// Index into `CompiledPolicy.rules`, or -1 for the default.
    public var ruleIndex: Int32
    /// Which default decided, when `ruleIndex == -1`.
    public var direction: Direction
    /// True when no rule matched.
    @inlinable public var isDefault: Bool { ruleIndex < 0 }
    public init(action: Verdict, ruleIndex: Int32, direction: Direction) {
        self.action = action
        self.ruleIndex = ruleIndex
        self.direction = direction
    }
}

/// A verdict in words: the deciding rule's place, text, name and reason, or the default.
public struct PolicyExplanation: Sendable, Hashable {
    public var action: Verdict
    /// True when the default decided.
    public var isDefault: Bool
    /// The rule's (or `default` line's) place; nil for a built-in default.
    public var location: SourceLocation?
    /// The rule as written, or the default line, or a description of the built-in default.
    public var text: String
    public var name: String?
    public var reason: String?

    /// `file:line: text` or `default (file:line: text)`.
    public var summary: String {
        let at = location.map { "\($0): " } ?? ""
        return isDefault ? "default (\(at)\(text))" : "\(at)\(text)"
    }
}
