// Answers for the control socket (`tunnelctl status|peers|policy …|kick`) and the WireGuard UAPI
// (`wg show`, `wg set`), built from the engine's live state.
import Engine
import Core
import ControlProtocol
import Glibc
import Packet
import Policy
import WireGuard

extension GatewayEngine {
    /// Wall-clock milliseconds of a monotonic instant (for handshake times).
    func wallMilliseconds(ofMonotonic t: UInt64) -> Int64 {
        let nowMono = clock.boottimeNanoseconds()
        let ageMs = Int64((nowMono &- t) / 1_000_000)
        return clock.wallMilliseconds() - ageMs
    }

    /// The running policy in the control protocol's terms.
    public func policySummary() -> PolicySummary {
        let p = policy
        return PolicySummary(generation: p.generation, files: p.set.files, ruleCount: p.compiled.rules.count,
                             loadedAtMs: p.loadedAtMs)
    }

    /// `tunnelctl status`.
    public func statusReply(interface: String, addresses: [String], listenPort: UInt16, version: String,
                            storeQueueDrops: UInt64 = 0, store: StoreHealth? = nil) -> StatusReply
    {
        var drops: [String: UInt64] = [:]
        for reason in GatewayDrop.allCases where counters.count(reason) > 0 {
            drops[reason.description] = counters.count(reason)
        }
        for reason in DropReason.allCases where device.dropCount(reason) > 0 {
            drops["wireguard-" + reason.description] = device.dropCount(reason)
        }
        let t = tun.counters
        for (name, n) in [("tun-truncated", t.truncatedReads), ("tun-refused", t.refusedWrites),
                          ("tun-malformed-offload", t.malformedReads)] where n > 0
        {
            drops[name] = n
        }
        var hosts: [String: UInt64] = [:]
        for event in HostEvent.allCases where counters.count(event) > 0 { hosts[event.description] = counters.count(event) }
        let now = clock.wallMilliseconds()
        let connected = peers.filter { device.status(of: $0.handle)?.hasCurrentKeypair == true }.count
        let coalesced = bind.coalescedReceives
        return StatusReply(
            pid: getpid(), startedAtMs: startedAtMs, uptimeSeconds: (now - startedAtMs) / 1000, version: version,
            interface: interface, listenPort: listenPort, addresses: addresses, peersConfigured: peers.count,
            peersConnected: connected, flowsActive: flowCount, drops: drops, storeQueueDrops: storeQueueDrops,
            policy: policySummary(),
            offload: OffloadStatus(tun: tun.offloadDescription, udpSegmentation: bind.segmentation,
                                   superPacketsRead: t.superPacketsRead, superPacketsWritten: t.superPacketsWritten,
                                   packetsCoalesced: t.packetsCoalesced, udpCoalescing: bind.receiveCoalescing,
                                   coalescedReceives: coalesced.messages, coalescedDatagrams: coalesced.datagrams),
            store: store, hosts: hosts.isEmpty && !policy.compiled.hasHostRules ? nil : hosts)
    }

    /// `tunnelctl peers`.
    public func peerStatuses() -> [ControlProtocol.PeerStatus] {
        peers.map { p in
            let s = device.status(of: p.handle)
            var status = ControlProtocol.PeerStatus(
                name: p.name, publicKey: p.publicKey.base64, tier: p.tier, endpoint: s?.endpoint?.description,
                lastHandshakeMs: s?.lastHandshake.map { wallMilliseconds(ofMonotonic: $0) },
                rxBytes: s?.rxBytes ?? 0, txBytes: s?.txBytes ?? 0,
                session: s?.refused == true ? .paused : (s?.hasCurrentKeypair == true ? .connected : .disconnected),
                allowedIPs: p.allowedIPs.map(\.description))
            // The tier's facts, as the registry (their one owner) holds them.
            status.configuredTier = p.configTier
            status.tierOrigin = p.tierOrigin.rawValue
            status.tierSinceMs = p.tierOverride?.since
            status.lapsedTier = p.lapsedTierOverride?.tier
            return status
        }
    }

    /// `tunnelctl policy show`: the rules in force with their hit counters, then the defaults.
    public func policyShowReply() -> PolicyShowReply {
        let p = policy
        var rules = p.compiled.rules.enumerated().map { i, r in
            PolicyRuleStatus(file: r.location.file, line: r.location.line, text: r.text, name: r.name,
                             hits: p.hits(rule: i))
        }
        for d in [p.set.defaultOut, p.set.defaultIn] {
            rules.append(PolicyRuleStatus(
                file: d.location?.file ?? "(built-in)", line: d.location?.line ?? 0, text: d.text, name: nil,
                hits: p.hits(rule: -1, direction: d.direction)))
        }
        return PolicyShowReply(policy: policySummary(), rules: rules)
    }

    /// `tunnelctl policy reload` / SIGHUP: load `directory`; on success install it under the next
    /// generation, on failure keep the running policy and report the errors with file:line:column.
    public func reloadPolicy(directory: String) -> PolicyReloadReply {
        switch ActivePolicy.load(directory: directory, gateway: options.policyGateway) {
        case .success(let loaded):
            let generation = install(policy: loaded)
            log.notice("policy: reloaded \(directory): \(loaded.1.rules.count) rules, generation \(generation)")
            log.event(.policyReload(generation: generation, rules: loaded.1.rules.count, error: nil, rule: nil))
            for w in loaded.0.warnings { log.warning("policy: \(w)") }
            policyReloadHook.withLock { $0 }?(generation, loaded.1.rules.count, directory)
            return PolicyReloadReply(policy: policySummary(), warnings: loaded.0.warnings.map(Self.diagnostic))
        case .failure(let failure):
            log.error("policy: reload of \(directory) failed, keeping generation \(policy.generation):\n\(failure)")
            var errors = failure.diagnostics.filter { $0.severity == .error }.map(Self.diagnostic)
            if errors.isEmpty {
                errors = [ControlProtocol.PolicyDiagnostic(file: directory, line: 0, column: 0, message: failure.message)]
            }
            let first = errors[0]
            log.event(.policyReload(generation: policy.generation, rules: policy.compiled.rules.count, error: first.message,
                                    rule: "\(first.file):\(first.line):\(first.column)"))
            return PolicyReloadReply(
                policy: policySummary(), errors: errors,
                warnings: failure.diagnostics.filter { $0.severity == .warning }.map(Self.diagnostic))
        }
    }

    static func diagnostic(_ d: Policy.PolicyDiagnostic) -> ControlProtocol.PolicyDiagnostic {
        ControlProtocol.PolicyDiagnostic(file: d.location.file, line: d.location.line, column: d.location.column,
                                 message: d.message)
    }

    // MARK: UAPI

    /// `get=1`: the device as `wg show` sees it.
    public func uapiSnapshot(privateKey: WireGuardKey?, listenPort: UInt16) -> UAPIDeviceSnapshot {
        let peers = peers.map { p -> UAPIPeerSnapshot in
            let s = device.status(of: p.handle)
            var sec: Int64 = 0
            var nsec: Int64 = 0
            if let hs = s?.lastHandshake {
                let ms = wallMilliseconds(ofMonotonic: hs)
                sec = ms / 1000
                nsec = (ms % 1000) * 1_000_000
            }
            return UAPIPeerSnapshot(
                publicKey: WireGuardKey(bytes: p.publicKey.bytes)!,
                presharedKey: p.presharedKey.flatMap { WireGuardKey(bytes: $0) },
                endpoint: s?.endpoint.map { HostPort(host: $0.address.description, port: $0.port) },
                lastHandshakeSec: sec, lastHandshakeNsec: nsec, txBytes: s?.txBytes ?? 0, rxBytes: s?.rxBytes ?? 0,
                persistentKeepaliveInterval: s?.persistentKeepaliveSeconds ?? p.persistentKeepalive,
                allowedIPs: p.allowedIPs)
        }
        return UAPIDeviceSnapshot(privateKey: privateKey, listenPort: listenPort, fwmark: 0, peers: peers)
    }

    /// `set=1`: peer add/remove/update, endpoint, keepalive, allowed IPs. Changing the private key
    /// or the listen port at runtime is refused with EINVAL (restart with a new config instead).
    public func uapiSet(_ request: UAPISetRequest, listenPort: UInt16) -> UAPIError? {
        if request.privateKey != nil {
            return .invalid("changing the private key at runtime is not supported; edit the config and restart")
        }
        if let port = request.listenPort, port != listenPort {
            return .invalid("changing the listen port at runtime is not supported; edit the config and restart")
        }
        if request.replacePeers {
            for p in peers { removePeer(p.handle) }
        }
        for update in request.peers {
            guard let key = WireGuard.PublicKey(update.publicKey.bytes) else { return .invalid("bad public key") }
            let existing = device.handle(for: key)
            if update.remove {
                if let h = existing { removePeer(h) }
                continue
            }
            if existing == nil && update.updateOnly { continue }
            let endpoint = update.endpoint.flatMap { e in e.address.map { Endpoint(address: $0, port: e.port) } }
            if update.endpoint != nil && endpoint == nil {
                return .invalid("endpoint must be an address, not a host name")
            }
            if let h = existing, let current = registry.current[h] {
                let psk = update.presharedKey.map(\.bytes) ?? current.presharedKey
                let keepalive = update.persistentKeepaliveInterval ?? current.persistentKeepalive
                device.updatePeer(h, PeerConfiguration(publicKey: key, presharedKey: psk,
                                                       persistentKeepaliveSeconds: keepalive, endpoint: endpoint))
                registry.update(h) {
                    $0.presharedKey = psk
                    $0.persistentKeepalive = keepalive
                }
                if update.replaceAllowedIPs || !update.allowedIPs.isEmpty {
                    setAllowedIPs(h, update.allowedIPs, replace: update.replaceAllowedIPs)
                }
            } else {
                // Named once, in the registry: every view (watch, peers, flows, store) shows it.
                addPeer(name: registry.runtimeName(for: key), publicKey: key, presharedKey: update.presharedKey?.bytes,
                        allowedIPs: update.allowedIPs, endpoint: endpoint,
                        persistentKeepalive: update.persistentKeepaliveInterval ?? 0, tier: .free, origin: .runtime)
            }
        }
        return nil
    }
}
