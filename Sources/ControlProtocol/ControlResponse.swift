import Core
/// The daemon's answer to a `ControlRequest`. On the wire:
/// `{"version":1,"type":"status","status":{…}}` or
/// `{"version":1,"type":"error","error":{"code":"unknownRequest","message":"…"}}`.
/// A reply `type` this build does not know decodes as `.unknown(type)`.
public enum ControlResponse: Hashable, Sendable {
    /// Reply to `.status`.
    case status(StatusReply)
    /// Reply to `.peers`.
    case peers([PeerStatus])
    /// Reply to `.policyReload` (a failed reload is a reply, not an error: it carries the errors).
    case policyReload(PolicyReloadReply)
    /// Reply to `.policyShow`.
    case policyShow(PolicyShowReply)
    /// Reply to `.kick`.
    case kick(KickReply)
    /// Reply to `.liveFlows`.
    case liveFlows([LiveFlow])
    /// Reply to `.capture`.
    case capture(CaptureReply)
    /// Reply to `peerTier`.
    case peerTier(PeerTierReply)
    /// Reply to `reload` (a config with errors is `.error` with code `invalidConfig` instead).
    case reload(ReloadReply)
    /// Reply to `metrics`: the exposition text, as `/metrics` serves it.
    case metrics(String)
    /// The request failed.
    case error(ControlErrorReply)
    /// A reply type this build does not know (only produced by decoding).
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
        case .error: return "error"
        case .unknown(let t): return t
        }
    }

    /// An error reply.
    public static func failure(_ code: ControlErrorCode, _ message: String) -> ControlResponse {
        .error(ControlErrorReply(code: code, message: message))
    }
}

extension ControlResponse: Codable {
    enum CodingKeys: String, CodingKey {
        case version, type, status, peers, policyReload, policyShow, kick, liveFlows, capture, peerTier, reload, metrics, error
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "status": self = .status(try c.decode(StatusReply.self, forKey: .status))
        case "peers": self = .peers(try c.decode([PeerStatus].self, forKey: .peers))
        case "policyReload": self = .policyReload(try c.decode(PolicyReloadReply.self, forKey: .policyReload))
        case "policyShow": self = .policyShow(try c.decode(PolicyShowReply.self, forKey: .policyShow))
        case "kick": self = .kick(try c.decode(KickReply.self, forKey: .kick))
        case "liveFlows": self = .liveFlows(try c.decode([LiveFlow].self, forKey: .liveFlows))
        case "capture": self = .capture(try c.decode(CaptureReply.self, forKey: .capture))
        case "peerTier": self = .peerTier(try c.decode(PeerTierReply.self, forKey: .peerTier))
        case "reload": self = .reload(try c.decode(ReloadReply.self, forKey: .reload))
        case "metrics": self = .metrics(try c.decode(String.self, forKey: .metrics))
        case "error": self = .error(try c.decode(ControlErrorReply.self, forKey: .error))
        default: self = .unknown(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ControlWire.version, forKey: .version)
        try c.encode(type, forKey: .type)
        switch self {
        case .status(let r): try c.encode(r, forKey: .status)
        case .peers(let r): try c.encode(r, forKey: .peers)
        case .policyReload(let r): try c.encode(r, forKey: .policyReload)
        case .policyShow(let r): try c.encode(r, forKey: .policyShow)
        case .kick(let r): try c.encode(r, forKey: .kick)
        case .liveFlows(let r): try c.encode(r, forKey: .liveFlows)
        case .capture(let r): try c.encode(r, forKey: .capture)
        case .peerTier(let r): try c.encode(r, forKey: .peerTier)
        case .reload(let r): try c.encode(r, forKey: .reload)
        case .metrics(let r): try c.encode(r, forKey: .metrics)
        case .error(let r): try c.encode(r, forKey: .error)
        case .unknown: break
        }
    }
}
