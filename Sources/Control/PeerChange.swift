import Core

/// One change a reload made to one peer (`tunnelctl reload`, SIGHUP, every `tunnelctl peer` edit,
/// a `wg set` written back): what the reply and tunneld's log line name, so "no peer changed" is
/// never said of a reload that disabled someone.
public struct PeerChange: Hashable, Sendable, Codable {
    /// What changed.
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// `Disabled = true` appeared: refused from now on (reason `disabled`).
        case disabled
        /// `Disabled` went: admitted again.
        case enabled
        /// `Expires` was set, moved or removed.
        case expires
        /// The configured `Tier` (an override from `tunnelctl peer tier` still wins over it).
        case tier
        /// `AllowedIPs`.
        case allowedIPs = "allowed-ips"
        /// The public key of a peer of the same name: a new peer in its place (its session ended).
        case publicKey = "public-key"
        /// `PresharedKey` was set, changed or removed (keys are never shown).
        case presharedKey = "preshared-key"
        /// `Name` (the peer is the same key).
        case name
        /// `PersistentKeepalive`.
        case keepalive
        /// `Endpoint`.
        case endpoint
        /// A per-peer limit key (`Rate`, `Quota`, `Session`, …).
        case limits
    }

    /// The peer's name (its new name for ``Kind/name``).
    public var peer: String
    public var kind: Kind
    /// The value before and after, as the config file writes it (nil where there is no value to
    /// show: `disabled`, `enabled`, keys, limits).
    public var from: String?
    public var to: String?

    public init(peer: String, kind: Kind, from: String? = nil, to: String? = nil) {
        self.peer = peer
        self.kind = kind
        self.from = from
        self.to = to
    }

    /// `bob disabled`, `alice tier free -> trial`, `carol AllowedIPs 10.99.0.4/32 -> 10.99.0.4/32, 10.99.0.9/32`.
    public var text: String {
        let change = { (what: String) in "\(peer) \(what) \(from ?? "none") -> \(to ?? "none")" }
        switch kind {
        case .disabled: return "\(peer) disabled"
        case .enabled: return "\(peer) enabled"
        case .expires: return "\(peer) Expires \(from ?? "never") -> \(to ?? "never")"
        case .tier: return change("tier")
        case .allowedIPs: return change("AllowedIPs")
        case .publicKey: return "\(peer) public key changed (a new peer in its place)"
        case .presharedKey: return "\(peer) preshared key " + (from == nil ? "set" : to == nil ? "removed" : "changed")
        case .name: return "\(from ?? "?") renamed \(peer)"
        case .keepalive: return change("PersistentKeepalive")
        case .endpoint: return change("Endpoint")
        case .limits: return "\(peer) limits changed"
        }
    }

    /// What changed between the peers of two configs, matched by public key as the reload applies
    /// them (a name with a new key is a ``Kind/publicKey`` change, not an add and a remove).
    /// Added and removed peers are not changes: ``ReloadReply`` lists them by name.
    public static func between(_ old: [PeerConfig], _ new: [PeerConfig]) -> (added: [String], removed: [String], changes: [PeerChange]) {
        var oldByKey: [WireGuardKey: PeerConfig] = [:]
        for p in old { oldByKey[p.publicKey] = p }
        let newKeys = Set(new.map(\.publicKey))
        var added: [String] = [], changes: [PeerChange] = []
        var removed = old.filter { !newKeys.contains($0.publicKey) }.map(\.name)
        for p in new {
            guard let o = oldByKey[p.publicKey] else {
                if let i = removed.firstIndex(of: p.name) {
                    removed.remove(at: i)
                    changes.append(PeerChange(peer: p.name, kind: .publicKey))
                } else {
                    added.append(p.name)
                }
                continue
            }
            changes += between(o, p)
        }
        return (added, removed, changes)
    }

    /// The changes of one peer (same public key), in a fixed order.
    public static func between(_ o: PeerConfig, _ p: PeerConfig) -> [PeerChange] {
        var out: [PeerChange] = []
        let n = p.name
        if o.name != n { out.append(PeerChange(peer: n, kind: .name, from: o.name, to: n)) }
        if o.disabled != p.disabled { out.append(PeerChange(peer: n, kind: p.disabled ? .disabled : .enabled)) }
        if o.expiresMs != p.expiresMs {
            out.append(PeerChange(peer: n, kind: .expires, from: o.expiresMs.map { TimeText.iso($0) }, to: p.expiresMs.map { TimeText.iso($0) }))
        }
        if o.tier != p.tier { out.append(PeerChange(peer: n, kind: .tier, from: o.tier.rawValue, to: p.tier.rawValue)) }
        if Set(o.allowedIPs) != Set(p.allowedIPs) {
            let text = { (l: [IPPrefix]) in l.isEmpty ? nil : l.map(\.description).joined(separator: ", ") }
            out.append(PeerChange(peer: n, kind: .allowedIPs, from: text(o.allowedIPs), to: text(p.allowedIPs)))
        }
        if o.presharedKey != p.presharedKey {
            out.append(PeerChange(peer: n, kind: .presharedKey, from: o.presharedKey == nil ? nil : "set", to: p.presharedKey == nil ? nil : "set"))
        }
        if (o.persistentKeepalive ?? 0) != (p.persistentKeepalive ?? 0) {
            let text = { (k: UInt16?) in (k ?? 0) == 0 ? nil : "\(k!)" }
            out.append(PeerChange(peer: n, kind: .keepalive, from: text(o.persistentKeepalive), to: text(p.persistentKeepalive)))
        }
        if o.endpoint != p.endpoint {
            out.append(PeerChange(peer: n, kind: .endpoint, from: o.endpoint.map { "\($0)" }, to: p.endpoint.map { "\($0)" }))
        }
        if o.limits != p.limits { out.append(PeerChange(peer: n, kind: .limits)) }
        return out
    }
}
