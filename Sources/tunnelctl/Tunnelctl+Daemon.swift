import Core
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime

/// Commands that ask the running daemon over `control.sock`: `status`, `peers`, `kick`, and the
/// `policy reload` / `policy show` subcommands. They exit 3 with a clear message when the daemon
/// is not running (tunnelctl(8)).
extension Tunnelctl {
    static let runStatus: Command.Body = { opts, console in
        let json = opts[.json]
        let config = try cliConfig(opts)
        try opts.finish()
        let reply = try ask(config, .status)
        guard case .status(let s) = reply else { throw unexpected(reply) }
        if json {
            console.print(try encodeJSON(StatusJSON(s)))
            return .ok
        }
        console.print(renderStatus(s))
        return .ok
    }

    /// `tunnelctl metrics`: the daemon renders the text (MetricsText, one owner); printed as is.
    static let runMetrics: Command.Body = { opts, console in
        let config = try cliConfig(opts)
        try opts.finish()
        let reply = try ask(config, .metrics)
        guard case .metrics(let text) = reply else { throw unexpected(reply) }
        console.print(text, terminator: "")
        return .ok
    }

    static let runPeers: Command.Body = { opts, console in
        let json = opts[.json]
        let namesOnly = opts[.names]
        let config = try cliConfig(opts)
        try opts.finish()
        // --names: the configuration alone (shell completion calls this on every TAB).
        if namesOnly {
            let names = config.peers.map(\.name)
            if json { console.print(try encodeJSON(names)) } else if !names.isEmpty { console.print(names.joined(separator: "\n")) }
            return .ok
        }
        // Without the daemon: the configured peers with the store's tiers and windows (exit 0).
        guard let reply = try askIfRunning(config, .peers) else { return try peersFromStore(config, json: json, console) }
        guard case .peers(let peers) = reply else { throw unexpected(reply) }
        if json {
            console.print(try encodeJSON(peers.map(PeerJSON.init)))
            return .ok
        }
        console.print(renderPeers(peers, now: cliNow()))
        return .ok
    }

    static let runKick: Command.Body = { opts, console in
        let json = opts[.json]
        let config = try cliConfig(opts)
        guard let name = opts.next() else { throw CLIError.usage("usage: tunnelctl kick PEER") }
        try opts.finish()
        let reply = try ask(config, .kick(peer: name))
        guard case .kick(let k) = reply else { throw unexpected(reply) }
        if json {
            console.print(try encodeJSON(KickJSON(k)))
        } else {
            console.print(k.endedSession ? "\(k.peer): session ended" : "\(k.peer): had no session")
        }
        return .ok
    }

    /// `tunnelctl policy reload`: the new generation, or the errors (exit 1) while the old policy keeps running.
    static let runPolicyReload: Command.Body = { opts, console in
        let json = opts[.json]
        let config = try cliConfig(opts)
        try opts.finish()
        let reply = try ask(config, .policyReload)
        guard case .policyReload(let r) = reply else { throw unexpected(reply) }
        if json {
            console.print(try encodeJSON(PolicyReloadJSON(r)))
            return r.succeeded ? .ok : .failure
        }
        for w in r.warnings { console.print("warning: \(w)") }
        if r.succeeded {
            console.print("policy reloaded: generation \(r.policy.generation), \(r.policy.ruleCount) rules from \(r.policy.files.count) file(s)")
            return .ok
        }
        for e in r.errors { console.error("error: \(e)") }
        console.error("policy NOT reloaded: generation \(r.policy.generation) keeps running; fix the errors and reload again")
        return .failure
    }

    /// `tunnelctl policy show`: the running rules with hit counters.
    static let runPolicyShow: Command.Body = { opts, console in
        let json = opts[.json]
        let config = try cliConfig(opts)
        try opts.finish()
        let reply = try ask(config, .policyShow)
        guard case .policyShow(let r) = reply else { throw unexpected(reply) }
        if json {
            console.print(try encodeJSON(PolicyShowJSON(r)))
            return .ok
        }
        console.print("policy generation \(r.policy.generation): \(r.policy.ruleCount) rules from \(r.policy.files.joined(separator: ", "))")
        let width = r.rules.map { "\($0.file):\($0.line)".count }.max() ?? 0
        console.print("\("HITS".leftPad(10))  \("WHERE".rightPad(width))  RULE")
        for rule in r.rules {
            let at = "\(rule.file):\(rule.line)".rightPad(width)
            console.print("\(String(rule.hits).leftPad(10))  \(at)  \(rule.text)")
        }
        return .ok
    }

    // MARK: shared

    /// The configuration named by `--config PATH` (default /etc/tunnelvision/tunneld.conf), parsed
    /// without reading the private key (tunnelctl never needs it).
    static func cliConfig(_ opts: ParsedOptions) throws -> TunnelConfig {
        try cliConfig(path: opts[.config] ?? TunnelConfig.defaultPath)
    }

    /// The configuration at `path`, parsed without reading the private key.
    static func cliConfig(path: String) throws -> TunnelConfig {
        let data = try readConfigFile(path)
        do {
            let dir = PathText.directory(of: path)
            return try TunnelConfig.parse(contents: Array(data), file: path, baseDirectory: dir)
        } catch {
            throw CLIError.failure("\(error)")
        }
    }

    /// The bytes of the configuration file. Missing: "cannot read … (use --config PATH)"; any other
    /// failure (permission denied, a directory, …) names the errno and what to do.
    static func readConfigFile(_ path: String) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw CLIError.failure("cannot read the configuration \(path) (use --config PATH)") }
            throw CLIError.failure("cannot read the configuration \(path): \(errnoText(e))\(accessHint(e, path))")
        }
        defer { Sys.close(fd) }
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let n: Int
            do throws(SystemError) {
                n = try Sys.read(fd, chunk, path)
            } catch {
                throw CLIError.failure("cannot read the configuration \(path): \(errnoText(error.errno))")
            }
            if n == 0 { return Data(bytes) }
            bytes += UnsafeRawBufferPointer(rebasing: chunk[0..<n])
        }
    }

    /// `Permission denied (errno 13)`.
    static func errnoText(_ e: Int32) -> String { "\(Runtime.errnoText(e)) (errno \(e))" }

    /// What to do about `e` on `path`: for EACCES/EPERM, "; run as root or with sudo, …".
    static func accessHint(_ e: Int32, _ path: String) -> String {
        guard e == EACCES || e == EPERM else { return "" }
        return "; run as root or with sudo, or as a user allowed to read \(path)"
    }

    /// Sends one request to the daemon; a daemon that is not running is exit status 3.
    static func ask(_ config: TunnelConfig, _ request: ControlRequest) throws -> ControlResponse {
        let client = ControlClient(socketPath: config.interface.controlSocketPath)
        let reply: ControlResponse
        do {
            reply = try client.send(request)
        } catch {
            if case .daemonNotRunning = error {
                throw CLIError(message: "tunneld is not running (no control socket at \(client.socketPath)); start it with `tunneld --config …` or `systemctl start tunneld`", code: .daemonNotRunning)
            }
            throw CLIError.failure("\(error)")
        }
        if case .error(let e) = reply {
            throw CLIError(message: e.message, code: e.code == .notFound ? .failure : .failure)
        }
        return reply
    }

    static func unexpected(_ reply: ControlResponse) -> CLIError {
        CLIError.failure("the daemon answered '\(reply.type)', which this tunnelctl does not expect (version mismatch?)")
    }

    /// `status`'s line about the shared store: reachable with its lag, or since when not.
    static func sharedStoreLine(_ sh: SharedStoreHealth, now: Int64, zone: Zone) -> String {
        var opens = "\(sh.sharedOpens) window(s) opened through it, \(sh.localOpens) here alone; "
            + "history journal \(sh.journalDepth) change(s) deep, \(sh.journalShipped) row(s) shipped"
        if sh.journalMissing > 0 { opens += ", \(sh.journalMissing) LOST (pruned before they shipped)" }
        if let e = sh.journalError { opens += ", journal UNREADABLE (\(e))" }
        if let from = sh.retentionFrom {
            let by = sh.retentionSetBy.map { " (set on \($0)\(sh.retentionSetAtMs.map { " at " + TimeText.local($0, zone: zone) } ?? ""))" } ?? ""
            switch from {
            case "shared": opens += "; retention: the shared store's\(by)"
            case "last-shared": opens += "; retention: the last shared one read\(by), kept while the store does not answer"
            case "local": opens += "; retention: this gateway's (the shared store holds none yet)"
            default: opens += "; retention: \(from)"
            }
        }
        if let since = sh.unavailableSinceMs {
            return "shared store: \(sh.backend) UNAVAILABLE since \(TimeText.local(since, zone: zone)) (\(sh.error ?? "unknown error")); "
                + "gateway \(sh.gateway) enforces from memory; \(sh.pending) change(s) kept for it; \(opens)"
        }
        guard let last = sh.lastSyncAtMs else {
            return "shared store: \(sh.backend), gateway \(sh.gateway), not reached yet; \(sh.pending) change(s) kept for it; \(opens)"
        }
        let lag = max(0, now - last)
        return "shared store: \(sh.backend), gateway \(sh.gateway), last sync \(DurationFormat.format(ms: lag / 100 * 100)) ago, "
            + "\(sh.pending) change(s) pending; \(opens)"
    }

    static func renderStatus(_ s: StatusReply, zone: Zone = TimeText.displayZone) -> String {
        var lines = [
            "tunneld \(s.version), pid \(s.pid), up \(remainingText(s.uptimeSeconds))",
            "interface \(s.interface), UDP port \(s.listenPort), addresses \(s.addresses.joined(separator: ", "))",
            "peers: \(s.peersConnected) connected of \(s.peersConfigured) configured",
            "flows: \(s.flowsActive) active",
            "policy: generation \(s.policy.generation), \(s.policy.ruleCount) rules from \(s.policy.files.count) file(s)",
        ]
        if let store = s.store {
            if let since = store.unavailableSinceMs {
                lines.append("store: UNAVAILABLE since \(TimeText.local(since, zone: zone)) (\(store.error ?? "unknown error")); "
                    + "\(store.retained) records kept for retry")
            } else {
                lines.append("store: writable")
            }
            let lost = RecordFamily.allCases.filter { store.drops[$0] > 0 }.map { "\($0.rawValue) \(store.drops[$0])" }
            lines.append("store drops: " + (lost.isEmpty ? "none" : lost.joined(separator: ", ")))
        } else {
            lines.append("store queue drops: \(s.storeQueueDrops)")
        }
        if let sh = s.shared {
            lines.append(sharedStoreLine(sh, now: s.startedAtMs + s.uptimeSeconds * 1000, zone: zone))
        }
        if let o = s.offload {
            lines.append("offloads: TUN \(o.tun), UDP GSO \(o.udpSegmentation ? "on" : "off"), UDP GRO \(o.udpCoalescing ? "on" : "off"); "
                + "\(o.superPacketsRead) super-packets read, \(o.superPacketsWritten) written "
                + "(\(o.packetsCoalesced) packets coalesced); \(o.coalescedDatagrams) datagrams received in \(o.coalescedReceives) coalesced messages")
        }
        if let hosts = s.hosts {
            let order = ["pending", "learned", "held-packets", "held-overflow", "pending-overflow", "pending-timeouts",
                         "unreadable", "held-discarded", "quic-unknown-blocked", "dns-answers", "dns-malformed"]
            let known = order.filter { hosts[$0] != nil } + hosts.keys.filter { !order.contains($0) }.sorted()
            lines.append("host learning: " + (known.isEmpty ? "nothing yet" : known.map { "\($0) \(hosts[$0]!)" }.joined(separator: ", ")))
        }
        if let page = s.statusPage {
            let host = page.address.contains(":") ? "[\(page.address)]" : page.address
            lines.append("status page: http://\(host)\(page.port == 80 ? "" : ":\(page.port)")/, \(page.requests) request(s), "
                + "\(page.refused) refused (not from a peer's address)")
        }
        if s.drops.isEmpty {
            lines.append("drops: none")
        } else {
            lines.append("drops:")
            for (reason, n) in s.drops.sorted(by: { $0.key < $1.key }) { lines.append("  \(reason): \(n)") }
        }
        return lines.joined(separator: "\n")
    }

    static func renderPeers(_ peers: [PeerStatus], now: Int64) -> String {
        var rows = [["PEER", "TIER", "SESSION", "ENDPOINT", "HANDSHAKE", "RX", "TX", "ALLOWED IPS", "LIMITS"]]
        for p in peers {
            let hs = p.lastHandshakeMs.map { remainingText(max(0, (now - $0) / 1000)) + " ago" } ?? "never"
            rows.append([p.name, p.tier.rawValue, p.session.rawValue, p.endpoint ?? "-", hs, bytesText(p.rxBytes),
                         bytesText(p.txBytes), p.allowedIPs.joined(separator: ","), limitsText(p)])
        }
        return table(rows)
    }

    /// The LIMITS cell of `peers` and the live view: `PeerLimits.summary`, with the quota's use
    /// (`quota 1GiB (312.0 MiB of 1GiB used)`); `unknown` when the daemon did not say.
    static func limitsText(_ p: PeerStatus) -> String {
        guard let limits = p.limits else { return "unknown" }
        guard let used = p.quotaUsed, let q = limits.quotaText(used) else { return limits.summary }
        return limits.summary + " (\(q))"
    }

    /// Left-aligned columns separated by two spaces.
    static func table(_ rows: [[String]]) -> String {
        guard let first = rows.first else { return "" }
        let widths = (0..<first.count).map { c in rows.map { $0[c].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in c == row.count - 1 ? cell : cell.rightPad(widths[c]) }
                .joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// `1h02m03s`, `5m10s`, `42s` (Core's one formatter).
    static func remainingText(_ seconds: Int64) -> String { DurationFormat.remaining(seconds: seconds) }

    /// `512 B`, `1.5 KiB`, `2.0 GiB`.
    static func bytesText(_ n: UInt64) -> String { SizeFormat.approximate(bytes: n) }
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
    /// Exactly `n` characters: spaces added on the right, or cut (as `padding(toLength:)` does).
    func rightPad(_ n: Int) -> String { count >= n ? String(prefix(n)) : self + String(repeating: " ", count: n - count) }
}
