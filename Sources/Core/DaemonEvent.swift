#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Something an operator alerts on or greps for, logged by tunneld as one structured event: in
/// the journal with its fields (`journalctl TUNNELVISION_EVENT=refusal
/// PEER=alice`), on stderr without journald as one line ending in the same `KEY=value` fields.
/// The one owner of event names, levels, texts and fields; `Logger.event` writes them.
public enum DaemonEvent: Sendable, Hashable {
    /// A peer's session started (its first handshake after being disconnected).
    case sessionStart(peer: String, tier: PeerTier)
    /// A peer's session ended, and why.
    case sessionEnd(peer: String, tier: PeerTier, reason: SessionEndReason)
    /// A peer's connected window ended (`free-limit`: its session time; `quota`: its byte quota),
    /// with the tier the window was under; its pause runs until `reconnectAtMs`.
    case windowEnd(peer: String, tier: PeerTier, reason: SessionEndReason, reconnectAtMs: Int64?)
    /// The first refused handshake of a pause (or of a disabled or expired peer); later ones are
    /// only counted (metrics, `tunnelctl refusals`).
    case refusal(peer: String, tier: PeerTier, reason: String)
    /// A peer's tier in force changed (`tunnelctl peer tier`).
    case tierChange(peer: String, from: PeerTier, to: PeerTier)
    /// A peer was added (config reload, `wg set`, `tunnelctl peer add`).
    case peerAdd(peer: String, tier: PeerTier)
    /// A peer was removed.
    case peerRemove(peer: String)
    /// A peer was disabled (`Disabled = true`) or its `Expires` date passed (`reason`).
    case peerDisable(peer: String, reason: String)
    /// The policy was reloaded (`generation`, `rules`), or a reload was refused (`error` with the
    /// first error's `file:line:column` as `rule`).
    case policyReload(generation: UInt64, rules: Int, error: String?, rule: String?)
    /// The store could not be written (`error`); history records wait or are dropped and counted.
    case storeOutage(path: String, error: String)
    /// The store is writable again after an outage.
    case storeRecovered(path: String, dropped: UInt64)

    /// `TUNNELVISION_EVENT=` value.
    public var name: String {
        switch self {
        case .sessionStart: "session-start"
        case .sessionEnd: "session-end"
        case .windowEnd: "window-end"
        case .refusal: "refusal"
        case .tierChange: "tier-change"
        case .peerAdd: "peer-add"
        case .peerRemove: "peer-remove"
        case .peerDisable: "peer-disable"
        case .policyReload: "policy-reload"
        case .storeOutage: "store-outage"
        case .storeRecovered: "store-recovered"
        }
    }

    /// Every event name (docs, tests).
    public static let names = ["session-start", "session-end", "window-end", "refusal", "tier-change", "peer-add",
                               "peer-remove", "peer-disable", "policy-reload", "store-outage", "store-recovered"]

    /// Syslog priority (RFC 5424): 6 info, 5 notice, 4 warning, 3 error.
    public var priority: Int32 {
        switch self {
        case .sessionStart, .sessionEnd, .windowEnd: 6
        case .refusal, .tierChange, .peerAdd, .peerRemove, .peerDisable, .storeRecovered: 5
        case .policyReload(_, _, let error, _): error == nil ? 5 : 3
        case .storeOutage: 3
        }
    }

    /// The human sentence (journal `MESSAGE=`, the text of the stderr line).
    public var message: String {
        switch self {
        case let .sessionStart(peer, tier): "peer \(peer): session started (\(tier.rawValue))"
        case let .sessionEnd(peer, _, reason): "peer \(peer): session ended (\(reason.rawValue))"
        case let .windowEnd(peer, tier, reason, at):
            "peer \(peer): \(tier.rawValue) window ended (\(reason.rawValue))" + (at.map { "; refused until \(TimeText.iso($0))" } ?? "")
        case let .refusal(peer, _, reason): "peer \(peer): handshake refused (\(reason)); further refusals are counted, not logged"
        case let .tierChange(peer, from, to): "peer \(peer): tier \(from.rawValue) -> \(to.rawValue)"
        case let .peerAdd(peer, tier): "peer \(peer): added (\(tier.rawValue))"
        case let .peerRemove(peer): "peer \(peer): removed"
        case let .peerDisable(peer, reason): "peer \(peer): \(reason == "expired" ? "expired" : "disabled"); its handshakes are refused"
        case let .policyReload(generation, rules, error, _):
            error.map { "policy: reload refused, generation \(generation) kept: \($0)" }
                ?? "policy: reloaded, generation \(generation) (\(rules) rules)"
        case let .storeOutage(path, error): "store \(path): cannot write (\(error)); history records wait and are counted if dropped"
        case let .storeRecovered(path, dropped): "store \(path): writable again; \(dropped) record(s) lost meanwhile"
        }
    }

    /// The structured fields after `TUNNELVISION_EVENT=`, in a fixed order (`PEER`, `TIER`,
    /// `REASON`, `RULE`, then the event's own).
    public var fields: [(key: String, value: String)] {
        var f: [(key: String, value: String)] = [("TUNNELVISION_EVENT", name)]
        switch self {
        case let .sessionStart(peer, tier):
            f += [("PEER", peer), ("TIER", tier.rawValue)]
        case let .sessionEnd(peer, tier, reason):
            f += [("PEER", peer), ("TIER", tier.rawValue), ("REASON", reason.rawValue)]
        case let .windowEnd(peer, tier, reason, at):
            f += [("PEER", peer), ("TIER", tier.rawValue), ("REASON", reason.rawValue)]
            if let at { f.append(("RECONNECT_AT", TimeText.iso(at))) }
        case let .refusal(peer, tier, reason):
            f += [("PEER", peer), ("TIER", tier.rawValue), ("REASON", reason)]
        case let .tierChange(peer, from, to):
            f += [("PEER", peer), ("TIER", to.rawValue), ("PREVIOUS_TIER", from.rawValue)]
        case let .peerAdd(peer, tier):
            f += [("PEER", peer), ("TIER", tier.rawValue)]
        case let .peerRemove(peer):
            f += [("PEER", peer), ("REASON", "removed")]
        case let .peerDisable(peer, reason):
            f += [("PEER", peer), ("REASON", reason)]
        case let .policyReload(generation, rules, error, rule):
            f += [("REASON", error == nil ? "reloaded" : "errors")]
            if let rule { f.append(("RULE", rule)) }
            f += [("POLICY_GENERATION", String(generation)), ("POLICY_RULES", String(rules))]
        case let .storeOutage(path, error):
            f += [("REASON", error), ("STORE", path)]
        case let .storeRecovered(path, dropped):
            f += [("REASON", "recovered"), ("STORE", path), ("DROPPED", String(dropped))]
        }
        return f
    }

    /// The stderr form: the message, then ` KEY=value` for each field (values with spaces or
    /// quotes are double-quoted with `\"` and `\\` escaped), so a line can be grepped like the journal.
    public var line: String {
        var s = message
        for (k, v) in fields {
            let plain = !v.isEmpty && v.unicodeScalars.allSatisfy { $0.value > 32 && $0 != "\"" && $0 != "\\" && $0.value < 127 }
            s += " \(k)=" + (plain ? v : "\"" + v.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
                .replacingAll("\n", with: "\\n") + "\"")
        }
        return s
    }
}
