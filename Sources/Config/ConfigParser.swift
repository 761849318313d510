import Core
import Packet

/// The line-oriented reader and validator behind `TunnelConfig.parse`.
struct ConfigParser {
    let file: String
    let baseDirectory: String?
    var sections: [ConfigSection] = []
    var errors: [ConfigError] = []
    var warnings: [ConfigError] = []
    var notes: [ConfigError] = []

    init(file: String, baseDirectory: String?) {
        self.file = file
        self.baseDirectory = baseDirectory
    }

    mutating func error(_ line: Int, _ key: String?, _ message: String, _ hint: String? = nil) {
        errors.append(ConfigError(file: file, line: line, key: key, message: message, hint: hint))
    }

    mutating func note(_ line: Int, _ key: String?, _ message: String, _ hint: String? = nil) {
        notes.append(ConfigError(file: file, line: line, key: key, message: message, hint: hint))
    }

    mutating func warn(_ line: Int, _ key: String?, _ message: String, _ hint: String? = nil) {
        warnings.append(ConfigError(file: file, line: line, key: key, message: message, hint: hint))
    }

    // MARK: Reading lines

    mutating func run(_ text: String) {
        var lineNumber = 0
        var ignoringSection = false
        var pendingName: (String, Int)?  // a name comment not yet followed by a header or a key
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0.isNewline }) {
            lineNumber += 1
            if let n = PeerNameComment.name(in: raw) { pendingName = (n, lineNumber); continue }
            var content = Substring(raw)
            if let hash = content.firstIndex(of: "#") { content = content[..<hash] }
            let line = content.trimmedSpaces()
            if line.isEmpty { continue }
            if line.hasPrefix("[") {
                ignoringSection = !header(line, lineNumber)
                if !ignoringSection, let (n, l) = pendingName, !sections[sections.count - 1].isInterface,
                    sections[sections.count - 1].tier == nil
                {
                    sections[sections.count - 1].commentName = n
                    sections[sections.count - 1].commentLine = l
                }
                pendingName = nil
                continue
            }
            pendingName = nil
            guard let eq = line.firstIndex(of: "=") else {
                error(lineNumber, nil, "'\(ConfigValue.abbreviate(line))' is not a setting", "write 'Key = Value'")
                continue
            }
            let keyText = line[..<eq].trimmedSpaces()
            let value = line[line.index(after: eq)...].trimmedSpaces()
            guard !keyText.isEmpty else {
                error(lineNumber, nil, "missing key before '='", "write 'Key = Value'")
                continue
            }
            guard !sections.isEmpty else {
                error(lineNumber, keyText, "setting outside a section", "put it under [Interface] or [Peer]")
                continue
            }
            if ignoringSection { continue }
            entry(keyText, value, lineNumber)
        }
    }

    /// Handles `[Interface]` / `[Peer]`; returns false for an unknown section (its keys are skipped).
    mutating func header(_ line: String, _ lineNumber: Int) -> Bool {
        guard line.hasSuffix("]") else {
            error(lineNumber, nil, "'\(line)' is not a section header", "write [Interface] or [Peer]")
            return false
        }
        let name = line.dropFirst().dropLast().trimmedSpaces()
        let words = name.split(separator: " ", omittingEmptySubsequences: true)
        if words.first?.lowercased() == "tier" {
            guard words.count == 2, let tier = PeerTier(keyword: words[1]) else {
                error(lineNumber, nil, "'\(line)' is not a tier section", "write [Tier NAME]; \(PeerTier.nameRule)")
                return false
            }
            if let first = sections.first(where: { $0.tier == tier }) {
                error(lineNumber, nil, "second [Tier \(tier)] section (the first is at line \(first.line))", "merge them into one")
                return false
            }
            sections.append(ConfigSection(isInterface: false, line: lineNumber, tier: tier))
            return true
        }
        switch name.lowercased() {
        case "interface":
            if let first = sections.first(where: \.isInterface) {
                error(lineNumber, nil, "second [Interface] section (the first is at line \(first.line))", "merge them into one")
            }
            sections.append(ConfigSection(isInterface: true, line: lineNumber))
            return true
        case "peer":
            sections.append(ConfigSection(isInterface: false, line: lineNumber))
            return true
        default:
            let guess = DidYouMean.closest(name, among: ["Interface", "Peer"])
            error(lineNumber, nil, "unknown section [\(name)]", guess.map { "did you mean [\($0)]?" } ?? "sections are [Interface], [Peer] and [Tier NAME]")
            return false
        }
    }

    mutating func entry(_ keyText: String, _ value: String, _ lineNumber: Int) {
        let isInterface = sections[sections.count - 1].isInterface
        let tier = sections[sections.count - 1].tier
        let known = tier != nil ? LimitSettings.keys : isInterface ? TunnelConfig.interfaceKeys : TunnelConfig.peerKeys + LimitSettings.keys
        let other = isInterface ? TunnelConfig.peerKeys + LimitSettings.keys : TunnelConfig.interfaceKeys + TunnelConfig.peerKeys
        let sectionName = tier.map { "[Tier \($0)]" } ?? (isInterface ? "[Interface]" : "[Peer]")
        guard let key = known.first(where: { $0.lowercased() == keyText.lowercased() }) else {
            if let o = other.first(where: { $0.lowercased() == keyText.lowercased() }) {
                let home = TunnelConfig.interfaceKeys.contains(o) ? "the [Interface] section"
                    : LimitSettings.keys.contains(o) ? "a [Peer] or [Tier NAME] section" : "the [Peer] section"
                error(lineNumber, o, "does not belong in \(sectionName)", "move it to \(home)")
            } else if let guess = DidYouMean.closest(keyText, among: known) {
                error(lineNumber, keyText, "unknown key in \(sectionName)", "did you mean '\(guess)'?")
            } else {
                error(lineNumber, keyText, "unknown key in \(sectionName)", "known keys: " + known.joined(separator: ", "))
            }
            return
        }
        let hooks: Set<String> = ["PreUp", "PostUp", "PreDown", "PostDown"]
        if value.isEmpty, hooks.contains(key) { return }  // wg-easy writes `PreUp = `: nothing to run
        guard !value.isEmpty else {
            error(lineNumber, key, "empty value", "give a value or remove the line")
            return
        }
        if !TunnelConfig.repeatableKeys.contains(key),
            let first = sections[sections.count - 1].entries.first(where: { $0.key == key })
        {
            error(lineNumber, key, "set twice in this section (first at line \(first.line))", "keep one")
            return
        }
        sections[sections.count - 1].entries.append(ConfigEntry(key: key, value: value, line: lineNumber))
    }

    // MARK: Building

    mutating func finish() throws(ConfigErrors) -> TunnelConfig {
        var interface = InterfaceConfig()
        if let section = sections.first(where: \.isInterface) {
            interface = buildInterface(section)
        } else {
            error(0, nil, "no [Interface] section", "add one with at least PrivateKey (or PrivateKeyFile) and Address")
        }
        var classes: [PeerTier: LimitSettings] = [:]
        for section in sections { if let t = section.tier { classes[t] = buildLimits(section) } }
        let tiers = interface.tierClasses(classes)
        var peers: [PeerConfig] = []
        var peerLines: [Int] = []
        for section in sections where !section.isInterface && section.tier == nil {
            if let p = buildPeer(section) {
                peers.append(p)
                peerLines.append(section.line)
            }
        }
        checkTiers(tiers, peers, peerLines, interface)
        checkPeers(peers, peerLines, interface)
        if !errors.isEmpty {
            throw ConfigErrors(errors.sorted { $0.line < $1.line })
        }
        return TunnelConfig(interface: interface, peers: peers, tiers: tiers, warnings: warnings.sorted { $0.line < $1.line },
                            notes: notes.sorted { $0.line < $1.line })
    }

    func resolve(_ path: String) -> String {
        guard !path.hasPrefix("/"), let base = baseDirectory else { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }

    mutating func buildInterface(_ section: ConfigSection) -> InterfaceConfig {
        var c = InterfaceConfig()
        var keyLine: Int?
        for e in section.entries {
            let v = e.value
            switch e.key {
            case "Name":
                if Self.isValidInterfaceName(v) { c.name = v } else {
                    error(e.line, e.key, "'\(v)' is not an interface name", "use 1-15 characters from A-Z a-z 0-9 _ = + . -")
                }
            case "PrivateKey", "PrivateKeyFile":
                if let l = keyLine {
                    error(e.line, e.key, "the private key is already given at line \(l)", "use either PrivateKey or PrivateKeyFile, once")
                    continue
                }
                keyLine = e.line
                if e.key == "PrivateKey" {
                    switch ConfigValue.key(v, what: "genkey") {
                    case .success(let k): c.privateKey = k; c.privateKeySource = .inline
                    case .failure(let p): error(e.line, e.key, p.message, p.hint)
                    }
                } else {
                    c.privateKeySource = .file(resolve(v))
                }
            case "ListenPort":
                switch ConfigValue.port(v) {
                case .success(let p): c.listenPort = p
                case .failure(let p): error(e.line, e.key, p.message, p.hint)
                }
            case "Address":
                for item in ConfigValue.list(v) {
                    guard let a = InterfaceAddress(item) else {
                        error(e.line, e.key, "'\(item)' is not an address with prefix length", "write e.g. 10.99.0.1/24 or fd99::1/64")
                        continue
                    }
                    if c.addresses.contains(where: { $0.address == a.address }) {
                        error(e.line, e.key, "\(a.address) is listed twice", "remove one")
                        continue
                    }
                    c.addresses.append(a)
                }
            case "MTU":
                guard let m = Int(v), v.allSatisfy({ $0.isASCII && $0.isNumber }), (576...65535).contains(m) else {
                    error(e.line, e.key, "'\(v)' is not an MTU", "use a number from 576 to 65535; 1420 suits most links")
                    continue
                }
                c.mtu = m
            case "FwMark":
                if v.lowercased() == "off" { c.fwMark = nil; continue }
                let parsed: UInt32? = v.lowercased().hasPrefix("0x")
                    ? UInt32(v.dropFirst(2), radix: 16) : (v.allSatisfy({ $0.isASCII && $0.isNumber }) ? UInt32(v) : nil)
                guard let mark = parsed else {
                    error(e.line, e.key, "'\(v)' is not a firewall mark", "use a 32-bit number (decimal or 0x hex) or off")
                    continue
                }
                c.fwMark = mark == 0 ? nil : mark
            case "StateDirectory": c.stateDirectory = resolve(v)
            case "RuntimeDirectory": c.runtimeDirectory = resolve(v)
            case "PolicyDirectory": c.policyDirectory = resolve(v)
            case "FreeSession", "FreePause", "WatchdogInterval":
                switch Result(catching: { () throws(ValueError) -> Duration in .milliseconds(try DurationFormat.parseFinite(v)) }) {
                case .failure(let p): error(e.line, e.key, p.message, p.hint)
                case .success(let d):
                    if d <= .zero {
                        error(e.line, e.key, "must be longer than zero", nil)
                    } else if e.key == "WatchdogInterval", d < .milliseconds(100) || d > .seconds(3600) {
                        error(e.line, e.key, "'\(v)' is out of range", "use 100ms to 1h; 5s is the default")
                    } else if e.key == "FreeSession" { c.freeSession = d }
                    else if e.key == "FreePause" { c.freePause = d }
                    else { c.watchdogInterval = d }
                }
            case "QUIC":
                guard ["inspect", "block-unknown"].contains(v.lowercased()) else {
                    error(e.line, e.key, "'\(v)' is not a QUIC setting", "use inspect (the default) or block-unknown")
                    continue
                }
                c.quic = v.lowercased()
            case "HostWait", "DNSTTLFloor", "DNSTTLCeiling":
                switch Result(catching: { () throws(ValueError) -> Duration in .milliseconds(try DurationFormat.parseFinite(v)) }) {
                case .failure(let p): error(e.line, e.key, p.message, p.hint)
                case .success(let d):
                    if e.key == "HostWait" {
                        guard d >= .milliseconds(10) && d <= .seconds(10) else {
                            error(e.line, e.key, "'\(v)' is out of range", "use 10ms to 10s; 1s is the default")
                            continue
                        }
                        c.hostWait = d
                    } else {
                        guard d <= .seconds(7 * 86_400) else {
                            error(e.line, e.key, "'\(v)' is out of range", "use 1s to 7d")
                            continue
                        }
                        if e.key == "DNSTTLFloor" { c.dnsTTLFloor = d } else { c.dnsTTLCeiling = d }
                    }
                }
            case "PublicEndpoint":
                guard let ep = HostPort(v) else {
                    error(e.line, e.key, "'\(v)' is not an endpoint", "write the host:port clients reach this gateway at, e.g. vpn.example.org:51820")
                    continue
                }
                c.publicEndpoint = ep
            case "MetricsListen":
                if v.lowercased() == "off" { c.metricsListen = nil; continue }
                guard let ep = Endpoint(v), ep.port != 0 else {
                    error(e.line, e.key, "'\(v)' is not an address:port to listen on",
                          "write e.g. 127.0.0.1:9586 or [::1]:9586 (an address, not a host name), or off")
                    continue
                }
                c.metricsListen = ep
            case "StatusListen":
                if v.lowercased() == "off" { c.statusListen = nil; continue }
                guard let ep = Endpoint(v), ep.port != 0 else {
                    error(e.line, e.key, "'\(v)' is not an address:port to listen on",
                          "write an address of this interface, e.g. 10.99.0.1:80 (peers open http://10.99.0.1/), or off")
                    continue
                }
                c.statusListen = ep
            case "Store":
                switch SharedStoreSetting.parse(v) {
                case .success(let setting): c.store = setting
                case .failure(let p): error(e.line, e.key, p.message, p.hint)
                }
            case "StorePassFile": c.storePassFile = resolve(v)
            case "GatewayName":
                guard SharedStoreSetting.isValidGatewayName(v) else {
                    error(e.line, e.key, "'\(v)' is not a gateway name", "use 1 to 64 of A-Z a-z 0-9 _ . - (e.g. gw-fra-1)")
                    continue
                }
                c.gatewayName = v
            case "DefaultTier":
                guard let t = PeerTier(rawValue: v.lowercased()) else {
                    error(e.line, e.key, "'\(v)' is not a tier name", PeerTier.nameRule)
                    continue
                }
                c.defaultTier = t
            case "DNS":
                // On a wg-quick server, DNS sets that machine's own resolver; it never reached the
                // clients. Kept as written, unused: the clients' resolver is ClientDNS.
                c.dns += ConfigValue.list(v).filter { !$0.isEmpty }
                warn(e.line, e.key, "wg-quick sets this machine's own resolver with it; tunneld does not use it, and client configs do not get it",
                     "to give clients a resolver, write ClientDNS = \(c.dns.joined(separator: ", ")) (tunnelctl peer add|config|qr put it in their DNS line)")
            case "ClientDNS":
                switch ConfigValue.dnsList(v) {
                case .success(let list): c.clientDNS = list
                case .failure(let p): error(e.line, e.key, p.message, p.hint)
                }
            case "SaveConfig":
                guard let b = ConfigValue.bool(v) else {
                    error(e.line, e.key, "'\(v)' is neither true nor false", "write SaveConfig = false, or remove it")
                    continue
                }
                c.saveConfig = b
                note(e.line, e.key, b ? "accepted, but tunneld never writes the running state back to this file on stop"
                                      : "accepted (tunneld never writes this file on stop)",
                     b ? "tunnelctl peer add|remove|rename|disable edit the file instead" : nil)
            case "Table":
                guard ["off", "auto"].contains(v.lowercased()) else {
                    error(e.line, e.key, "'\(v)' is not supported: tunneld adds routes for AllowedIPs to the main table only",
                          "write Table = off or auto, or remove it")
                    continue
                }
                c.table = v.lowercased()
                note(e.line, e.key, v.lowercased() == "off" ? "accepted; tunneld still adds routes for peers' AllowedIPs outside the interface subnets"
                                                           : "accepted; tunneld adds routes to the main table as wg-quick's auto does")
            case "PreUp", "PostUp", "PreDown", "PostDown":
                switch e.key {
                case "PreUp": c.preUp.append(v)
                case "PostUp": c.postUp.append(v)
                case "PreDown": c.preDown.append(v)
                default: c.postDown.append(v)
                }
                note(e.line, e.key, "runs as root through /bin/sh with %i replaced by the interface name, as wg-quick does", nil)
            case "ControlGroup":
                if v.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }), v.count <= 32 {
                    c.controlGroup = v
                } else {
                    error(e.line, e.key, "'\(v)' is not a group name", "use a name from /etc/group")
                }
            default:
                break
            }
        }
        if keyLine == nil {
            error(section.line, "PrivateKey", "missing in [Interface]", "add PrivateKey = $(wg genkey) or PrivateKeyFile = PATH")
        }
        if c.addresses.isEmpty, !section.entries.contains(where: { $0.key == "Address" }) {
            error(section.line, "Address", "missing in [Interface]", "add e.g. Address = 10.99.0.1/24")
        }
        if c.mtu < 1280, c.addresses.contains(where: \.address.isIPv6),
            let line = section.entries.first(where: { $0.key == "MTU" })?.line
        {
            error(line, "MTU", "\(c.mtu) is below 1280, the IPv6 minimum, and an IPv6 Address is set", "use at least 1280")
        }
        return c
    }

    static func isValidInterfaceName(_ s: String) -> Bool {
        guard (1...15).contains(s.utf8.count), s != ".", s != ".." else { return false }
        return s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_=+.-".contains($0)) }
    }

    static func isValidPeerName(_ s: String) -> Bool {
        guard (1...32).contains(s.utf8.count) else { return false }
        return s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_.-".contains($0)) }
    }

    mutating func buildPeer(_ section: ConfigSection) -> PeerConfig? {
        var name: String?
        var publicKey: WireGuardKey?
        var peer = PeerConfig(name: "", publicKey: WireGuardKey(bytes: [UInt8](repeating: 0, count: 32))!)
        var seenAllowed = Set<IPPrefix>()  // (a peer with 100,000 prefixes stays linear)
        var ok = true
        for e in section.entries {
            let v = e.value
            switch e.key {
            case "Name":
                if Self.isValidPeerName(v) { name = v } else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is not a peer name", "use 1-32 characters from A-Z a-z 0-9 _ . -")
                }
            case "PublicKey":
                switch ConfigValue.key(v, what: "pubkey") {
                case .success(let k): publicKey = k
                case .failure(let p): ok = false; error(e.line, e.key, p.message, p.hint)
                }
            case "PresharedKey":
                switch ConfigValue.key(v, what: "genpsk") {
                case .success(let k): peer.presharedKey = k
                case .failure(let p): ok = false; error(e.line, e.key, p.message, p.hint)
                }
            case "AllowedIPs":
                for item in ConfigValue.list(v) {
                    guard let a = InterfaceAddress(item) else {
                        ok = false
                        error(e.line, e.key, "'\(item)' is not an address or CIDR prefix", "write e.g. 10.99.0.2/32 or fd99::2/128")
                        continue
                    }
                    let p = a.subnet
                    if p.address != a.address {
                        warn(e.line, e.key, "'\(item)' has host bits set; it means \(p)", "write \(p)")
                    }
                    if !seenAllowed.insert(p).inserted {
                        warn(e.line, e.key, "\(p) is listed twice for this peer", nil)
                        continue
                    }
                    peer.allowedIPs.append(p)
                }
            case "Endpoint":
                guard let ep = HostPort(v) else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is not an endpoint", "write host:port, e.g. 203.0.113.5:51820 or [2001:db8::5]:51820")
                    continue
                }
                peer.endpoint = ep
            case "PersistentKeepalive":
                if v.lowercased() == "off" { peer.persistentKeepalive = nil; continue }
                guard v.allSatisfy({ $0.isASCII && $0.isNumber }), v.count <= 5, let n = Int(v), n <= 65535 else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is not a keepalive interval", "use seconds from 1 to 65535 (25 is usual) or off")
                    continue
                }
                peer.persistentKeepalive = n == 0 ? nil : UInt16(n)
            case "Expires":
                guard let ms = TimeText.parseDate(v, zone: ConfigValue.utc) else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is not a date", "write YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC unless a Z or ±HH:MM follows)")
                    continue
                }
                peer.expiresMs = ms
            case "Disabled":
                guard let b = ConfigValue.bool(v) else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is neither true nor false", "write Disabled = true, or remove the line")
                    continue
                }
                peer.disabled = b
            case "ClientDNS":
                switch ConfigValue.dnsList(v) {
                case .success(let list): peer.clientDNS = list
                case .failure(let p): ok = false; error(e.line, e.key, p.message, p.hint)
                }
            case "ClientEndpoint":
                guard let ep = HostPort(v) else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is not an endpoint", "write host:port, e.g. vpn.example.org:51820")
                    continue
                }
                peer.clientEndpoint = ep
            case "ClientAllowedIPs":
                var list: [IPPrefix] = []
                for item in ConfigValue.list(v) {
                    guard let p = IPPrefix(item) else {
                        ok = false
                        error(e.line, e.key, "'\(item)' is not a CIDR prefix", "write e.g. 0.0.0.0/0, ::/0 or 192.168.1.0/24")
                        continue
                    }
                    list.append(p)
                }
                peer.clientAllowedIPs = list
            case "Tier":
                guard let t = PeerTier(rawValue: v.lowercased()) else {
                    ok = false
                    error(e.line, e.key, "'\(v)' is not a tier name", PeerTier.nameRule)
                    continue
                }
                peer.tier = t
            default:
                if LimitSettings.keys.contains(e.key) {
                    do throws(ValueError) { try peer.limits.set(e.key, v) } catch {
                        ok = false
                        self.error(e.line, e.key, error.message, error.hint)
                    }
                }
            }
        }
        let hasName = section.entries.contains { $0.key == "Name" }
        let hasKey = section.entries.contains { $0.key == "PublicKey" }
        if !hasName, let written = section.commentName {
            if let n = PeerNameComment.sanitized(written) {
                name = n
                peer.nameOrigin = .comment
                note(section.commentLine, "Name", "peer named '\(n)' after this comment" + (n == written ? "" : " ('\(written)')"),
                     "add Name = \(n) to keep it when the comment goes")
            }
        }
        if !hasKey {
            ok = false
            error(section.line, "PublicKey", "missing in [Peer]\(name.map { " '\($0)'" } ?? "")", "add PublicKey = the peer's `wg pubkey` output")
        }
        if name == nil, !hasName, let publicKey {
            name = PeerName.fromKey(publicKey.base64)
            peer.nameOrigin = .publicKey
            note(section.line, "Name", "peer named '\(name!)' after its key", "add Name = ... to give it a better one")
        }
        guard ok, let name, let publicKey else { return nil }
        peer.name = name
        peer.publicKey = publicKey
        if peer.allowedIPs.isEmpty {
            warn(section.line, "AllowedIPs", "peer '\(name)' has no AllowedIPs, so none of its packets will be accepted", "add its tunnel address, e.g. AllowedIPs = 10.99.0.2/32")
        }
        return peer
    }

    /// The limit keys of a `[Tier NAME]` section.
    mutating func buildLimits(_ section: ConfigSection) -> LimitSettings {
        var l = LimitSettings()
        for e in section.entries {
            do throws(ValueError) { try l.set(e.key, e.value) } catch { self.error(e.line, e.key, error.message, error.hint) }
        }
        if let t = section.tier, t == .free, l.session != nil || l.pause != nil,
            sections.first(where: \.isInterface)?.entries.contains(where: { $0.key == "FreeSession" || $0.key == "FreePause" }) == true
        {
            note(section.line, nil, "[Tier free] sets Session/Pause: they win over FreeSession/FreePause of [Interface]",
                 "keep one of the two")
        }
        return l
    }

    /// Every tier a peer or `DefaultTier` names is predefined or has a `[Tier]` section.
    mutating func checkTiers(_ tiers: TierClasses, _ peers: [PeerConfig], _ lines: [Int], _ interface: InterfaceConfig) {
        let known = tiers.names.map(\.rawValue)
        func hint(_ t: PeerTier) -> String {
            (DidYouMean.closest(t.rawValue, among: known).map { "did you mean '\($0)'? " } ?? "")
                + "configured tiers: \(known.joined(separator: ", ")); add a [Tier \(t)] section to define it"
        }
        func line(_ sectionLine: Int, _ key: String) -> Int? {
            sections.first { $0.line == sectionLine }?.entries.first { $0.key == key }?.line
        }
        for (i, p) in peers.enumerated() where !tiers.isConfigured(p.tier) {
            error(line(lines[i], "Tier") ?? lines[i], "Tier", "peer '\(p.name)' is in tier '\(p.tier)', which is not configured", hint(p.tier))
        }
        if !tiers.isConfigured(interface.defaultTier) {
            let at = sections.first(where: \.isInterface)?.entries.first { $0.key == "DefaultTier" }?.line ?? 0
            error(at, "DefaultTier", "tier '\(interface.defaultTier)' is not configured", hint(interface.defaultTier))
        }
    }

    /// Cross-peer checks: unique names and keys, AllowedIPs identical between peers (error: which
    /// peer would own the prefix is ambiguous) or nested (warning: longest prefix wins routing,
    /// and the wider peer's packets from the narrower range are dropped by cryptokey routing).
    mutating func checkPeers(_ peers: [PeerConfig], _ lines: [Int], _ interface: InterfaceConfig) {
        var names: [String: Int] = [:]
        var keys: [WireGuardKey: Int] = [:]
        for (i, p) in peers.enumerated() {
            if let j = names[p.name] {
                error(lines[i], "Name", "peer name '\(p.name)' is already used by the peer at line \(lines[j])", "peer names must be unique")
            } else {
                names[p.name] = i
            }
            if let j = keys[p.publicKey] {
                error(lines[i], "PublicKey", "peer '\(p.name)' has the same public key as '\(peers[j].name)' (line \(lines[j]))", "each peer needs its own key pair")
            } else {
                keys[p.publicKey] = i
            }
            if let own = interface.privateKey, p.presharedKey == own {
                error(lines[i], "PresharedKey", "peer '\(p.name)' uses the interface's private key as preshared key", "generate one with `wg genpsk`")
            }
        }
        // Pairs (earlier peer i, later peer j, a's index in i, b's index in j) found in O(prefixes ×
        // distinct prefix lengths) through a table of prefixes — not by comparing every pair of
        // peers (10,000 peers are 50 M pairs) — then reported in the order the pairwise loop had.
        var owners: [IPPrefix: [(peer: Int, index: Int)]] = [:]
        var lengths: [Bool: Set<Int>] = [false: [], true: []]
        for (k, p) in peers.enumerated() {
            for (x, a) in p.allowedIPs.enumerated() {
                owners[a, default: []].append((k, x))
                lengths[a.address.isIPv6]!.insert(a.length)
            }
        }
        var found: [(i: Int, j: Int, a: Int, b: Int)] = []
        for (k, p) in peers.enumerated() {
            for (x, n) in p.allowedIPs.enumerated() {
                for o in owners[n]! where o.peer < k { found.append((o.peer, k, o.index, x)) }
                for l in lengths[n.address.isIPv6]! where l < n.length {
                    for o in owners[IPPrefix(n.address, length: l)!] ?? [] where o.peer != k {
                        found.append(o.peer < k ? (o.peer, k, o.index, x) : (k, o.peer, x, o.index))
                    }
                }
            }
        }
        found.sort { ($0.i, $0.j, $0.a, $0.b) < ($1.i, $1.j, $1.a, $1.b) }
        for f in found {
            let (i, j) = (f.i, f.j)
            let a = peers[i].allowedIPs[f.a], b = peers[j].allowedIPs[f.b]
            if a == b {
                error(lines[j], "AllowedIPs", "\(b) is also allowed for peer '\(peers[i].name)' (line \(lines[i]))", "a prefix can belong to one peer only")
            } else {
                let (wide, narrow) = a.length < b.length ? (a, b) : (b, a)
                warn(lines[j], "AllowedIPs", "\(b) of peer '\(peers[j].name)' overlaps \(a) of peer '\(peers[i].name)'; packets to \(narrow) go to the more specific peer", "make the prefixes disjoint unless \(wide) is meant to exclude \(narrow)")
            }
        }
    }
}
