import Core
/// A request to the running daemon over `control.sock` (docs/control.md).
///
/// On the wire (see `ControlWire`) a request is one JSON object:
/// `{"version":1,"type":"kick","peer":"alice"}`. A `type` this build does not know decodes as
/// `.unknown(type)` so the server can answer with a typed `unknownRequest` error instead of
/// failing to parse — that is how newer clients talk to older daemons.
public enum ControlRequest: Hashable, Sendable {
    /// Daemon, interface, counters and policy summary → `ControlResponse.status`.
    case status
    /// Every configured peer with live state → `ControlResponse.peers`.
    case peers
    /// Re-read the policy directory → `ControlResponse.policyReload` (with the error on failure).
    case policyReload
    /// The running rules with hit counters → `ControlResponse.policyShow`.
    case policyShow
    /// End a peer's session now (stop reason `admin-kick`) → `ControlResponse.kick`.
    case kick(peer: String)
    /// Flows in the daemon's table now, optionally one peer's → `ControlResponse.liveFlows`.
    case liveFlows(peer: String?)
    /// Apply capture settings now (`tunnelctl capture on|off`, after it wrote the settings row)
    /// → `ControlResponse.capture` once they are in force. `detail` is `metadata` or `full`.
    case capture(enabled: Bool, detail: String)
    /// Change a peer's tier in force (`tunnelctl peer tier`): the daemon applies it and writes
    /// the store in one step → `ControlResponse.peerTier`.
    case peerTier(peer: String, tier: PeerTier)
    /// Re-read the whole config file and apply the difference to the peers (`tunnelctl reload`,
    /// SIGHUP) → `ControlResponse.reload`, or `.error` with code `invalidConfig` (nothing changed).
    case reload
    /// The Prometheus exposition text the daemon renders (`tunnelctl metrics`) → `ControlResponse.metrics`.
    case metrics
    /// A request type this build does not know (only produced by decoding).
    case unknown(type: String)

    /// The `type` string on the wire.
    public var type: String {
        switch self {
        case .status: return "status"
        case .peers: return "peers"
        case .policyReload: return "policyReload"
        case .policyShow: return "policyShow"
        case .kick: return "kick"
        case .liveFlows: return "liveFlows"
        case .capture: return "capture"
        case .peerTier: return "peerTier"
        case .reload: return "reload"
        case .metrics: return "metrics"
        case .unknown(let t): return t
        }
    }
}

extension ControlRequest: Codable {
    enum CodingKeys: String, CodingKey {
        case version, type, peer, enabled, detail, tier
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "status": self = .status
        case "peers": self = .peers
        case "policyReload": self = .policyReload
        case "policyShow": self = .policyShow
        case "kick": self = .kick(peer: try c.decode(String.self, forKey: .peer))
        case "liveFlows": self = .liveFlows(peer: try c.decodeIfPresent(String.self, forKey: .peer))
        case "capture":
            self = .capture(enabled: try c.decode(Bool.self, forKey: .enabled), detail: try c.decode(String.self, forKey: .detail))
        case "peerTier":
            self = .peerTier(peer: try c.decode(String.self, forKey: .peer), tier: try c.decode(PeerTier.self, forKey: .tier))
        case "reload": self = .reload
        case "metrics": self = .metrics
        default: self = .unknown(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ControlWire.version, forKey: .version)
        try c.encode(type, forKey: .type)
        if case .kick(let peer) = self { try c.encode(peer, forKey: .peer) }
        if case .peerTier(let peer, let tier) = self {
            try c.encode(peer, forKey: .peer)
            try c.encode(tier, forKey: .tier)
        }
        if case .liveFlows(let peer?) = self { try c.encode(peer, forKey: .peer) }
        if case .capture(let enabled, let detail) = self {
            try c.encode(enabled, forKey: .enabled)
            try c.encode(detail, forKey: .detail)
        }
    }
}
