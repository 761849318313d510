import Core
import Packet
import Policy

/// One flow decision, a value taken once under the flow lock and reported once: the flow after
/// the packet that decided it, its peer, the verdict, the policy generation that decided it
/// (held, so its rules stay readable whatever reloads follow), whether this decision opened the
/// flow, and the host it was known by.
///
/// `rule()` turns it into the words every record keeps (`DecidedRule`): history stores those,
/// never an index to look up later.
public struct FlowDecision: Sendable {
    /// The flow after the deciding packet.
    public let entry: FlowEntry
    /// The WireGuard peer handle's raw value.
    public let peer: UInt32
    /// The action and the deciding rule's index in `policy`.
    public let verdict: PolicyVerdict
    /// The policy (generation) that decided.
    public let policy: ActivePolicy
    /// True when this decision opened the flow (its first packet, or the first after it waited
    /// for its host); false for a flow decided again after a reload or a `during` boundary.
    public let opened: Bool
    /// The name the flow is known by (TLS SNI, HTTP Host, QUIC SNI or a DNS name), nil when none.
    public let host: String?
    /// True when no rule decided but `QUIC = block-unknown`: a UDP/443 flow whose verdict
    /// depended on a host its QUIC Initial did not show.
    public let quicUnknown: Bool

    public init(entry: FlowEntry, peer: UInt32, verdict: PolicyVerdict, policy: ActivePolicy, opened: Bool, host: String?,
                quicUnknown: Bool = false) {
        self.entry = entry
        self.peer = peer
        self.verdict = verdict
        self.policy = policy
        self.opened = opened
        self.host = host
        self.quicUnknown = quicUnknown
    }

    /// The rule text a refusal row keys on: the rule's place, `quic-unknown`, or `default`.
    public static let quicUnknownRule = "quic-unknown"
    static let quicUnknownReason = "QUIC = block-unknown: its QUIC Initial showed no host the rules could be decided by"

    /// The policy generation that decided.
    public var generation: UInt64 { policy.generation }

    /// The peer's tier in that generation (nil: the peer was not known to it).
    public var tier: PeerTier? { policy.tier(peer) }

    /// The decision in words, as it was taken: the rule's place, name and reason in this
    /// generation, or the default; and the tier.
    public func rule() -> DecidedRule {
        if quicUnknown {
            return DecidedRule(generation: generation, place: nil, name: nil, reason: FlowDecision.quicUnknownReason,
                               tier: tier?.rawValue)
        }
        return policy.decidedRule(verdict, tier: tier)
    }
}

extension ActivePolicy {
    /// `verdict` of this generation in words (`DecidedRule`).
    public func decidedRule(_ verdict: PolicyVerdict, tier: PeerTier?) -> DecidedRule {
        let why = compiled.explain(verdict)
        guard !why.isDefault, let at = why.location else {
            return DecidedRule(generation: generation, place: nil, name: nil, reason: DecidedRule.defaultReason(verdict.action),
                               tier: tier?.rawValue)
        }
        return DecidedRule(generation: generation, place: "\(at.file):\(at.line)", name: why.name,
                           reason: DecidedRule.reasonText(reason: why.reason, name: why.name, text: why.text), tier: tier?.rawValue)
    }
}
