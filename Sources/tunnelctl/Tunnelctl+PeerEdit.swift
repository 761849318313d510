import Config
import ControlProtocol
import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime
import WireGuard

/// `tunnelctl peer add|remove|disable|enable|rename|list|show|config` and `tunnelctl reload`
/// (docs/peers.md). The config file is the one record of the peers: every edit goes
/// through `ConfigRewriter` (comments and layout kept), is checked by parsing the result, lands
/// with `AtomicFile.replace`, and then the running tunneld is asked to `reload`. With tunneld not
/// running the edited file is the change, and tunneld reads it when it starts.
extension Tunnelctl {
    /// The configuration file `--config` names (or the default) and what it says; every `peer`
    /// subcommand reads it before its arguments.
    static func peerConfig(_ opts: ParsedOptions) throws -> (path: String, config: TunnelConfig) {
        let path = opts[.config] ?? TunnelConfig.defaultPath
        return (path, try cliConfig(path: path))
    }

    static let runPeerRemove: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        let name = try oneName(&opts, "remove")
        _ = try configuredPeer(name, config)
        try editConfig(configPath) { text throws(ValueError) in try ConfigRewriter.removePeer(text, named: name) }
        try removeKeptKey(configPath, name)
        console.print("\(name): removed from \(configPath)")
        return try reloadAfterEdit(config, console)
    }

    static let runPeerDisable: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        return try setDisabled(try oneName(&opts, "disable"), true, configPath, config, console)
    }

    static let runPeerEnable: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        return try setDisabled(try oneName(&opts, "enable"), false, configPath, config, console)
    }

    static let runPeerRename: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        guard let old = opts.next(), let new = opts.next() else { throw CLIError.usage(usageText(["peer", "rename"])) }
        try opts.finish()
        _ = try configuredPeer(old, config)
        try checkNewName(new, config)
        try editConfig(configPath) { text throws(ValueError) in try ConfigRewriter.renamePeer(text, from: old, to: new) }
        let dir = clientKeyDirectory(configPath)
        if Sys.exists(dir + "/\(old).key") { try? Sys.rename(dir + "/\(old).key", dir + "/\(new).key") }
        console.print("\(old): renamed \(new) in \(configPath) (policy rules that name '\(old)' need the new name too)")
        return try reloadAfterEdit(config, console)
    }

    static let runPeerList: Command.Body = { opts, console in
        let (_, config) = try peerConfig(opts)
        try opts.finish()
        return try peerList(config, console, json: opts[.json])
    }

    static let runPeerShow: Command.Body = { opts, console in
        let (_, config) = try peerConfig(opts)
        let name = try oneName(&opts, "show")
        return try peerShow(try configuredPeer(name, config), config, console, json: opts[.json])
    }

    static let runPeerConfig: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        let name = try oneName(&opts, "config")
        let peer = try configuredPeer(name, config)
        let (text, kept) = try clientConfig(peer, configPath, config, privateKey: nil, dns: nil, endpoint: nil, allowedIPs: nil)
        console.print(text, terminator: "")
        if !kept {
            console.error("\(name): the client's private key is not stored (it was shown once by 'peer add'); "
                + "put it in the PrivateKey line, or make a new key pair with 'peer remove \(name)' and 'peer add \(name) --keep-client-key'")
        }
        return .ok
    }

    /// The one positional NAME of `peer SUB NAME`, and nothing after it.
    static func oneName(_ opts: inout ParsedOptions, _ sub: String) throws -> String {
        guard let name = opts.next() else { throw CLIError.usage(usageText(["peer", sub])) }
        try opts.finish()
        return name
    }

    static func checkNewName(_ name: String, _ config: TunnelConfig) throws {
        guard TunnelConfig.isValidPeerName(name) else {
            throw CLIError.usage("'\(name)' is not a peer name; use 1-32 characters from A-Z a-z 0-9 _ . -")
        }
        if config.peer(named: name) != nil { throw CLIError.failure("a peer named '\(name)' already exists; pick another name") }
    }

    // MARK: the file

    /// Reads the config, applies `edit`, refuses a result that does not parse (nothing written),
    /// and replaces the file atomically (mode and owner kept).
    static func editConfig(_ path: String, _ edit: (String) throws(ValueError) -> String) throws {
        let data = try readConfigFile(path)
        let before = String(decoding: data, as: UTF8.self)
        let after: String
        do { after = try edit(before) } catch { throw CLIError.failure("\(path): \(error)") }
        do {
            _ = try TunnelConfig.parse(after, file: path, baseDirectory: PathText.directory(of: path))
        } catch {
            throw CLIError.failure("the edit would leave \(path) with errors, so nothing was written:\n\(error)")
        }
        do {
            try AtomicFile.replace(path, contents: Array(after.utf8))
        } catch {
            throw CLIError.failure("cannot write \(path): \(error); the file is unchanged")
        }
    }

    /// `clients/` beside the config: where `--keep-client-key` keeps private keys (0700, files 0600).
    static func clientKeyDirectory(_ configPath: String) -> String {
        let dir = PathText.directory(of: configPath)
        return (dir.isEmpty ? "." : dir) + "/clients"
    }

    static func removeKeptKey(_ configPath: String, _ name: String) throws {
        try? Sys.unlinkIfPresent(clientKeyDirectory(configPath) + "/\(name).key")
    }

    /// Asks tunneld to reload and says what happened. Not running: the file is the change.
    static func reloadAfterEdit(_ config: TunnelConfig, _ console: Console, toStderr: Bool = false) throws -> ExitCode {
        let say: (String) -> Void = { toStderr ? console.error($0) : console.print($0) }
        let client = ControlClient(socketPath: config.interface.controlSocketPath)
        let reply: ControlResponse
        do {
            reply = try client.send(.reload)
        } catch {
            if case .daemonNotRunning = error {
                say("tunneld is not running: the configuration file is the change; tunneld reads it when it starts")
                return .ok
            }
            throw CLIError.failure("the file is changed, but tunneld could not be asked to reload: \(error); run 'tunnelctl reload'")
        }
        switch reply {
        case .reload(let r):
            say(reloadSummary(r))
            try refusePolicyErrors(r)
            return .ok
        case .error(let e) where e.code == .unknownRequest:
            throw CLIError.failure("the file is changed, but this tunneld is older than tunnelctl and cannot reload peers; "
                + "restart it (systemctl restart tunneld) to apply the change")
        case .error(let e):
            throw CLIError.failure("the file is changed, but tunneld refused the reload:\n\(e.message)")
        default:
            throw unexpected(reply)
        }
    }

    /// `tunneld reloaded: bob disabled; policy generation 3`: every peer change named
    /// (`ReloadReply.peerText`, the words tunneld's log line uses too), then the warnings.
    static func reloadSummary(_ r: ReloadReply) -> String {
        let head = r.policyErrors.isEmpty ? "tunneld reloaded" : "tunneld applied the peers but refused the rule files"
        var lines = ["\(head): \(r.peerText); policy generation \(r.policyGeneration)"]
        lines += r.warnings.map { "warning: " + $0 }
        return lines.joined(separator: "\n")
    }

    /// A reload whose policy files were refused is not a success, though the peers may have
    /// changed: the rules in force are still the old generation's.
    static func refusePolicyErrors(_ r: ReloadReply) throws {
        guard !r.policyErrors.isEmpty else { return }
        throw CLIError.failure("tunneld kept the running policy (generation \(r.policyGeneration)); the policy files have errors:\n"
            + r.policyErrors.joined(separator: "\n"))
    }

    static let runReload: Command.Body = { opts, console in
        let config = try cliConfig(opts)
        try opts.finish()
        return try reload(config, console)
    }

    static func reload(_ config: TunnelConfig, _ console: Console) throws -> ExitCode {
        let reply: ControlResponse
        do {
            reply = try ControlClient(socketPath: config.interface.controlSocketPath).send(.reload)
        } catch {
            if case .daemonNotRunning(let path) = error {
                throw CLIError(message: "tunneld is not running (no control socket at \(path)); it reads the configuration when it starts", code: .daemonNotRunning)
            }
            throw CLIError.failure("\(error)")
        }
        switch reply {
        case .reload(let r):
            console.print(reloadSummary(r))
            try refusePolicyErrors(r)
            return .ok
        case .error(let e) where e.code == .unknownRequest:
            throw CLIError.failure("this tunneld is older than tunnelctl and cannot reload peers; restart it to read the configuration")
        case .error(let e):
            throw CLIError.failure("tunneld kept the running configuration; the file has errors:\n\(e.message)")
        default:
            throw unexpected(reply)
        }
    }

    // MARK: add

    static let runPeerAdd: Command.Body = { opts, console in
        let (configPath, config) = try peerConfig(opts)
        let tierText = opts[.tier]
        let ipText = opts[.ip] ?? "auto"
        let dns = opts[.dns]
        let endpointText = opts[.endpoint]
        let allowedText = opts[.allowedIPs]
        let expiresText = opts[.expires]
        let psk = opts[.psk]
        let keep = opts[.keepClientKey]
        let qr = opts[.qr]
        let name = try oneName(&opts, "add")
        try checkNewName(name, config)
        var tier: PeerTier?
        if let tierText {
            tier = try configuredTier(tierText, config, what: "--tier")
        }
        var endpoint: HostPort?
        if let endpointText {
            guard let e = HostPort(endpointText) else { throw CLIError.usage("--endpoint '\(endpointText)' is not host:port, e.g. vpn.example.org:51820") }
            endpoint = e
        }
        guard let publicEndpoint = endpoint ?? config.interface.publicEndpoint else {
            throw CLIError.failure("no PublicEndpoint in [Interface] of \(configPath), so the client config would have no Endpoint; "
                + "add PublicEndpoint = HOST:PORT (where clients reach this gateway) or pass --endpoint HOST:PORT")
        }
        var clientAllowed: [IPPrefix]?
        if let allowedText {
            var list: [IPPrefix] = []
            for item in allowedText.split(separator: ",").map({ $0.trimmedSpaces() }) {
                guard let p = IPPrefix(item) else { throw CLIError.usage("--allowed-ips: '\(item)' is not a prefix, e.g. 0.0.0.0/0 or 192.168.1.0/24") }
                list.append(p)
            }
            clientAllowed = list
        }
        let taken = config.peers.flatMap(\.allowedIPs)
        var addresses: [IPPrefix]
        if ipText == "auto" {
            do { addresses = try AddressAllocator.next(interface: config.interface.addresses, taken: taken) } catch {
                throw CLIError.failure("\(configPath): \(error)")
            }
        } else {
            addresses = []
            for item in ipText.split(separator: ",").map({ $0.trimmedSpaces() }) {
                guard let a = IPAddress(item) else { throw CLIError.usage("--ip: '\(item)' is not an address; write auto, 10.99.0.7 or fd99::7") }
                let p = IPPrefix(a, length: a.isIPv6 ? 128 : 32)!
                if let owner = config.peers.first(where: { $0.allowedIPs.contains { $0.address.isIPv6 == a.isIPv6 && $0.contains(a) } }) {
                    throw CLIError.failure("--ip \(a) is already in the AllowedIPs of peer '\(owner.name)'; pick another or use --ip auto")
                }
                if config.interface.addresses.contains(where: { $0.address == a }) {
                    throw CLIError.failure("--ip \(a) is the gateway's own address; pick another or use --ip auto")
                }
                addresses.append(p)
            }
        }
        var expires: Int64?
        if let expiresText {
            let now = cliNow()
            if let ms = TimeText.parseDate(expiresText, zone: .utc) {
                expires = ms
            } else {
                do { expires = now + (try DurationFormat.parseFinite(expiresText)) } catch {
                    throw CLIError.usage("--expires '\(expiresText)' is neither a date (2027-01-31, 2027-01-31T12:00Z) nor a duration (30d, 12h)")
                }
            }
            if expires! <= now { throw CLIError.usage("--expires \(TimeText.iso(expires!)) is in the past") }
        }
        let random = SystemRandom()
        let privateKey = X25519.generatePrivateKey(random)
        let publicKey = WireGuardKey(bytes: X25519.publicKey(of: privateKey))!
        var presharedKey: WireGuardKey?
        if psk {
            var b = [UInt8](repeating: 0, count: 32)
            b.withUnsafeMutableBytes { random.fill($0) }
            presharedKey = WireGuardKey(bytes: b)
        }
        var entries: [(key: String, value: String)] = [("Name", name), ("PublicKey", publicKey.base64)]
        if let presharedKey { entries.append(("PresharedKey", presharedKey.base64)) }
        entries.append(("AllowedIPs", addresses.map(\.description).joined(separator: ", ")))
        if let tier { entries.append(("Tier", tier.rawValue)) }
        if let expires { entries.append(("Expires", TimeText.iso(expires))) }
        // What the client config needs later (peer config, peer qr): stored, not just printed once.
        if let dns { entries.append(("ClientDNS", dns)) }
        if let endpoint { entries.append(("ClientEndpoint", endpoint.description)) }
        if let clientAllowed { entries.append(("ClientAllowedIPs", clientAllowed.map(\.description).joined(separator: ", "))) }
        try editConfig(configPath) { text throws(ValueError) in
            ConfigRewriter.appendPeer(text, entries: entries, comment: ["added by tunnelctl peer add, \(TimeText.iso(cliNow()))"])
        }
        if keep { try keepClientKey(configPath, name, privateKey) }
        var peer = PeerConfig(name: name, publicKey: publicKey, presharedKey: presharedKey, allowedIPs: addresses, tier: tier ?? .free)
        peer.expiresMs = expires
        peer.clientDNS = dns.map { $0.split(separator: ",").map { $0.trimmedSpaces() } } ?? []
        peer.clientEndpoint = endpoint
        peer.clientAllowedIPs = clientAllowed
        let (text, _) = try clientConfig(peer, configPath, config, privateKey: WireGuardKey(bytes: privateKey)!,
                                         dns: nil, endpoint: publicEndpoint, allowedIPs: nil)
        console.error("\(name): added to \(configPath) with \(addresses.map(\.description).joined(separator: ", "))"
            + (keep ? "; client key kept in \(clientKeyDirectory(configPath))/\(name).key"
                    : "; the client config below holds the only copy of its private key"))
        let code = try reloadAfterEdit(config, console, toStderr: true)
        if qr {
            // The phone apps import the code as it is; the text is the same as without --qr.
            let (modules, width) = try qrMatrix(text)
            console.print(qrBlocks(modules, width, margin: 2), terminator: "")
        } else {
            console.print(text, terminator: "")
        }
        return code
    }

    static func keepClientKey(_ configPath: String, _ name: String, _ key: [UInt8]) throws {
        let dir = clientKeyDirectory(configPath)
        do {
            try Sys.mkdirIfMissing(dir, 0o700)
            try AtomicFile.replace(dir + "/\(name).key", contents: Array((WireGuardKey(bytes: key)!.base64 + "\n").utf8), newMode: 0o600)
        } catch {
            throw CLIError.failure("the peer is added, but its client key could not be kept: \(error)")
        }
    }

    // MARK: client config

    /// The client's private key kept by `--keep-client-key` (or put there by hand), nil when none
    /// is there or it is not a key.
    static func keptClientKey(_ configPath: String, _ name: String) -> WireGuardKey? {
        guard let data = try? Sys.readFile(clientKeyDirectory(configPath) + "/\(name).key", limit: 4096) else { return nil }
        return WireGuardKey(base64: String(decoding: data, as: UTF8.self).trimmedSpaces())
    }

    /// The client's wg-quick file. The private key: `privateKey` (at add), else the kept file,
    /// else a placeholder comment (`kept` false).
    static func clientConfig(_ peer: PeerConfig, _ configPath: String, _ config: TunnelConfig, privateKey: WireGuardKey?,
                             dns: String?, endpoint: HostPort?, allowedIPs: [IPPrefix]?) throws -> (String, Bool) {
        guard let endpoint = endpoint ?? peer.clientEndpoint ?? config.interface.publicEndpoint else {
            throw CLIError.failure("no PublicEndpoint in [Interface] of \(configPath), so the client config has no Endpoint; "
                + "add PublicEndpoint = HOST:PORT (where clients reach this gateway)")
        }
        let serverKey = try serverPublicKey(configPath, config)
        let key = privateKey ?? keptClientKey(configPath, peer.name)
        let hosts = peer.allowedIPs.filter { $0.length == $0.address.bitWidth }
        var lines = ["[Interface]"]
        lines.append(key.map { "PrivateKey = \($0.base64)" } ?? "# PrivateKey = (shown once by 'tunnelctl peer add'; not stored)")
        lines.append("Address = " + (hosts.isEmpty ? peer.allowedIPs : hosts).map(\.description).joined(separator: ", "))
        let dnsList = dns.map { [$0] } ?? config.clientDNS(of: peer)
        if !dnsList.isEmpty { lines.append("DNS = " + dnsList.joined(separator: ", ")) }
        lines += ["", "[Peer]", "PublicKey = \(serverKey.base64)"]
        if let psk = peer.presharedKey { lines.append("PresharedKey = \(psk.base64)") }
        lines.append("Endpoint = \(endpoint)")
        lines.append("AllowedIPs = " + ((allowedIPs ?? peer.clientAllowedIPs)?.map(\.description).joined(separator: ", ") ?? "0.0.0.0/0, ::/0"))
        lines.append("PersistentKeepalive = 25")
        return (lines.joined(separator: "\n") + "\n", key != nil)
    }

    static func serverPublicKey(_ configPath: String, _ config: TunnelConfig) throws -> WireGuardKey {
        var priv = config.interface.privateKey
        if priv == nil {
            do { priv = try TunnelConfig.load(path: configPath).interface.privateKey } catch {
                throw CLIError.failure("cannot read the gateway's private key for its public key: \(error)")
            }
        }
        guard let priv else { throw CLIError.failure("\(configPath) has no private key") }
        return WireGuardKey(bytes: X25519.publicKey(of: priv.bytes))!
    }

    // MARK: list and show

    /// The running tunneld's peers (nil when it is not running or does not answer).
    static func livePeers(_ config: TunnelConfig) -> [ControlProtocol.PeerStatus]? {
        guard case .peers(let live)? = try? askIfRunning(config, .peers) else { return nil }
        return live
    }

    static func handshakes(_ live: [ControlProtocol.PeerStatus]?) -> [String: Int64] {
        var handshakes: [String: Int64] = [:]
        for p in live ?? [] { if let h = p.lastHandshakeMs { handshakes[p.name] = h } }
        return handshakes
    }

    static func peerJSON(_ p: PeerConfig, _ tier: TierFacts, _ handshakes: [String: Int64], _ now: Int64) -> ConfiguredPeerJSON {
        ConfiguredPeerJSON(peer: p.name, publicKey: p.publicKey.base64, allowedIPs: p.allowedIPs.map(\.description), tier: tier.inForce,
                           configuredTier: p.tier, tierOrigin: tier.origin,
                           expiresAt: p.expiresMs.map { TimeText.iso($0) }, disabled: p.disabled, state: peerState(p, now),
                           lastHandshake: handshakes[p.name].map { TimeText.iso($0) })
    }

    static func peerList(_ config: TunnelConfig, _ console: Console, json: Bool) throws -> ExitCode {
        let live = livePeers(config)
        let handshakes = handshakes(live)
        let tiers = try WindowSource.open(config, local: false, live: live, localOption: false)
        let now = cliNow()
        let shared = try sharedAdmissions(config)
        let peers = config.peers.map { admitted($0, shared).peer }
        if json {
            console.print(try encodeJSON(peers.map { peerJSON($0, tiers.tierFacts(of: $0), handshakes, now) }))
            return .ok
        }
        var rows = [["NAME", "ADDRESSES", "TIER", "EXPIRES", "STATE", "LAST HANDSHAKE"]]
        for p in peers {
            rows.append([p.name, p.allowedIPs.map(\.description).joined(separator: ","), tiers.tierFacts(of: p).inForce.rawValue,
                         p.expiresMs.map { TimeText.iso($0) } ?? "never", peerState(p, now),
                         handshakes[p.name].map { TimeText.iso($0) } ?? "-"])
        }
        let widths = (0..<rows[0].count).map { c in rows.map { $0[c].count }.max()! }
        for r in rows {
            console.print(r.enumerated().map { $0.offset == r.count - 1 ? $0.element : $0.element.rightPad(widths[$0.offset]) }
                .joined(separator: "  "))
        }
        return .ok
    }

    static func peerState(_ p: PeerConfig, _ now: Int64) -> String {
        if p.disabled { return "disabled" }
        if let e = p.expiresMs, e <= now { return "expired" }
        return "enabled"
    }

    static func peerShow(_ configured: PeerConfig, _ config: TunnelConfig, _ console: Console, json: Bool) throws -> ExitCode {
        let (p, from) = admitted(configured, try sharedAdmissions(config))
        let live = livePeers(config)
        let tier = try WindowSource.open(config, local: false, live: live, localOption: false).tierFacts(of: p)
        if json {
            console.print(try encodeJSON(peerJSON(p, tier, handshakes(live), cliNow())))
            return .ok
        }
        var lines = [
            "name: \(p.name)" + (p.nameOrigin == .nameKey ? "" : p.nameOrigin == .comment ? " (from a comment)" : " (from its key)"),
            "public key: \(p.publicKey.base64)",
            "preshared key: \(p.presharedKey == nil ? "no" : "yes")",
            "allowed IPs: \(p.allowedIPs.map(\.description).joined(separator: ", "))",
            "tier: \(tier.text)",
            "expires: \(p.expiresMs.map { TimeText.iso($0) } ?? "never")",
            "state: \(peerState(p, cliNow()))" + (from.map { " (set on \($0.gateway) at \(TimeText.iso($0.changedAt)), shared store)" } ?? ""),
        ]
        if let e = p.endpoint { lines.append("endpoint: \(e)") }
        if let k = p.persistentKeepalive { lines.append("persistent keepalive: \(k)s") }
        if let l = live?.first(where: { $0.name == p.name }) {
            lines.append("last handshake: \(l.lastHandshakeMs.map { TimeText.iso($0) } ?? "never")")
            if let ep = l.endpoint { lines.append("current endpoint: \(ep)") }
        }
        console.print(lines.joined(separator: "\n"))
        return .ok
    }
}
