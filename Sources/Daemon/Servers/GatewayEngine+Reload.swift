import Config
import Core
import Engine
import WireGuard

extension GatewayEngine {
    /// Applies a re-read configuration's peers like `wg syncconf`: peers are matched by
    /// public key; new ones are added, gone ones removed (their sessions end `removed` through the
    /// registry's listener), changed ones (name, AllowedIPs, preshared key, keepalive, endpoint,
    /// configured tier) updated in place — an untouched peer's keys, session, flows and window are
    /// not disturbed. Peers added over the UAPI (origin runtime) are left alone. Returns the names.
    public func applyConfigPeers(_ peers: [PeerConfig]) -> (added: [String], removed: [String], changed: [String]) {
        let current = registry.current
        var wanted: [WireGuard.PublicKey: PeerConfig] = [:]
        for p in peers { if let key = WireGuard.PublicKey(p.publicKey.bytes) { wanted[key] = p } }
        var added: [String] = [], removed: [String] = [], changed: [String] = []
        var newPeers: [NewPeer] = []
        // By key once, not a linear search per peer (a reload of 10,000 peers was O(n²)).
        var byKey: [WireGuard.PublicKey: GatewayPeer] = [:]
        for p in current.all where wanted[p.publicKey] != nil { byKey[p.publicKey] = p }
        for old in current.all where old.origin == .config && wanted[old.publicKey] == nil {
            removePeer(old.handle)
            removed.append(old.name)
        }
        for p in peers {
            guard let key = WireGuard.PublicKey(p.publicKey.bytes) else { continue }
            let endpoint = p.endpoint.flatMap { e in e.address.map { Endpoint(address: $0, port: e.port) } }
            guard let old = byKey[key] else {
                newPeers.append(NewPeer(name: p.name, publicKey: key, presharedKey: p.presharedKey?.bytes, allowedIPs: p.allowedIPs,
                                        endpoint: endpoint, persistentKeepalive: p.persistentKeepalive ?? 0, tier: p.tier,
                                        limits: p.limits))
                added.append(p.name)
                continue
            }
            let psk = p.presharedKey?.bytes
            let keepalive = p.persistentKeepalive ?? 0
            var differs = false
            if old.presharedKey != psk || old.persistentKeepalive != keepalive || endpoint != nil {
                let status = device.status(of: old.handle)
                if old.presharedKey != psk || old.persistentKeepalive != keepalive || (endpoint != nil && status?.endpoint != endpoint) {
                    _ = device.updatePeer(old.handle, PeerConfiguration(
                        publicKey: key, presharedKey: psk, persistentKeepaliveSeconds: keepalive,
                        endpoint: endpoint ?? status?.endpoint))
                    differs = true
                }
            }
            if Set(old.allowedIPs) != Set(p.allowedIPs) {
                setAllowedIPs(old.handle, p.allowedIPs, replace: true)
                differs = true
            }
            let renamed = old.name != p.name
            let retiered = old.configTier != p.tier
            if renamed || retiered || old.presharedKey != psk || old.persistentKeepalive != keepalive || old.limitSettings != p.limits {
                registry.update(old.handle) { g in
                    g.name = p.name
                    // The tier in force follows unless an override holds it (the registry's).
                    g.configTier = p.tier
                    g.presharedKey = psk
                    g.persistentKeepalive = keepalive
                    g.limitSettings = p.limits
                }
                differs = true
            }
            if differs { changed.append(p.name) }
        }
        addPeers(newPeers)  // one registry change for all of them
        return (added, removed, changed)
    }
}
