import ControlProtocol
import Core

/// How a reload names what it changed: the difference between the peers of two configs.
extension PeerChange {
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
