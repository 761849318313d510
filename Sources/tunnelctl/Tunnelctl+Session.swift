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
import Policy
import Sessions
import Store

/// `tunnelctl session [NAME]` and `tunnelctl explain PEER` (docs/session.md): a free peer's
/// window and pause, read from the store (the daemon, when it runs, adds whether the peer is
/// connected right now and the tier in force from its registry).
extension Tunnelctl {
    static let runSession: Command.Body = { opts, console in
        let json = opts[.json]
        let local = opts[.local]
        let config = try cliConfig(opts)
        let name = opts.next()
        try opts.finish()
        let peers = try name.map { [try configuredPeer($0, config)] } ?? config.peers
        let now = cliNow()
        let daemon = try askIfRunning(config, .peers)
        let source = try WindowSource.open(config, local: local, live: daemon.flatMap(livePeerList))
        if source.local == nil && !source.isShared { return noStoreAnswer("session", config, json: json, console) }
        let live = try liveSessions(daemon)
        if live == nil && !json { console.error("note: tunneld is not running; connection state from the store") }
        let reports = try peers.map { try sessionReport($0, config: config, source: source, live: live, now: now) }
        if json {
            console.print(try encodeJSON(name == nil ? AnyEncodable(reports) : AnyEncodable(reports[0])))
        } else {
            for r in reports { console.print(r.line) }
        }
        return .ok
    }

    /// `session`, `explain PEER` and `peers` without tunneld answer from the store's windows,
    /// tiers and sessions: with no store there the answer is not known, and a default one ("the
    /// next connection opens a window") would be a guess that reads as a fact — StateDirectory
    /// may point elsewhere. Exit 1 with the reason where the answer would be (stdout; stderr
    /// with --json, whose stdout is for JSON only).
    static func noStoreAnswer(_ command: String, _ config: TunnelConfig, json: Bool, _ console: Console, peer: String? = nil) -> ExitCode {
        let why = "not known: the store \(config.interface.storePath) does not exist "
            + "(tunneld has not run with this configuration yet, or StateDirectory points elsewhere)"
        if json {
            console.error("tunnelctl \(command): \(peer.map { "\($0): " } ?? "")\(why)")
        } else {
            console.print("\(peer.map { "\($0): " } ?? "")\(why)")
        }
        return .failure
    }

    /// Who the daemon says is connected (nil when it is not running).
    static func liveSessions(_ config: TunnelConfig) throws -> [String: PeerSessionState]? {
        try liveSessions(try askIfRunning(config, .peers))
    }

    /// Who the daemon's `peers` reply says is connected (nil: no reply).
    static func liveSessions(_ reply: ControlResponse?) throws -> [String: PeerSessionState]? {
        guard let peers = reply.flatMap(livePeerList) else { return nil }
        return Dictionary(peers.map { ($0.name, $0.session) }, uniquingKeysWith: { a, _ in a })
    }

    /// The peers of a `peers` reply.
    static func livePeerList(_ reply: ControlResponse) -> [PeerStatus]? {
        guard case .peers(let peers) = reply else { return nil }
        return peers
    }

    /// One peer's window state at `now`.
    static func sessionReport(_ peer: PeerConfig, config: TunnelConfig, source: WindowSource, live: [String: PeerSessionState]?,
                              now: Int64) throws -> SessionReport
    {
        let tier = try source.tier(of: peer)
        let limits = config.limits(of: peer, tier: tier)
        let stored = try source.window(peer.name)
        let window = stored?.window
        let connected = live?[peer.name] == .connected
        var r = SessionReport(peer: peer.name, tier: tier.rawValue, state: connected ? "connected" : "disconnected",
                              limited: limits.isWindowed, daemonRunning: live != nil,
                              windowSeconds: (limits.sessionMs ?? 0) / 1000)
        r.limits = limits.summary
        let used = ByteUse(up: window?.usedUp ?? 0, down: window?.usedDown ?? 0)
        let who = "\(peer.name) (\(tier))"
        let session = limits.sessionMs.map { remainingText($0 / 1000) + " window" } ?? "window (until its quota is used)"
        // The phase comes from the rules tunneld applies (Sessions.WatchdogRules), never re-derived here.
        switch WatchdogRules.phase(now: now, limits: limits, window: window?.dates) {
        case .unlimited:
            r.line = "\(who): \(r.state), " + (limits.isUnlimited ? "unlimited" : "no session limit (\(limits.summary))")
        case .noWindow, .pauseOver:
            r.line = "\(who): \(r.state), " + (connected ? "window not yet recorded" : "the next connection opens a \(session)")
        case .inWindow(let w):
            if limits.hasQuota {
                r.quotaUsedUp = used.up
                r.quotaUsedDown = used.down
                r.quota = limits.quotaText(used)
            }
            r.reconnectAt = w.isOpenEnded ? nil : isoText(w.reconnectAt)
            if w.isOpenEnded {
                r.line = "\(who): \(r.state), no time limit in its window"
            } else {
                r.allowedUntil = isoText(w.allowedUntil)
                let left = WatchdogRules.secondsLeft(now: now, until: w.allowedUntil)
                r.secondsLeft = left
                r.line = "\(who): \(r.state), \(remainingText(left)) left\(connected ? "" : " in its window") "
                    + "(until \(clockText(w.allowedUntil))), then paused until \(clockText(w.reconnectAt))"
            }
            if let q = r.quota { r.line += "; \(q)" }
        case .paused(let w):
            r.allowedUntil = isoText(w.allowedUntil)
            r.reconnectAt = isoText(w.reconnectAt)
            let wait = WatchdogRules.secondsLeft(now: now, until: w.reconnectAt)
            r.state = "paused"
            r.secondsToReconnect = wait
            if limits.hasQuota {
                r.quotaUsedUp = used.up
                r.quotaUsedDown = used.down
                r.quota = limits.quotaText(used)
            }
            let why = limits.hasQuota && WatchdogRules.quotaReached(up: used.up, down: used.down, limits: limits) ? " (quota used: \(r.quota ?? ""))" : ""
            r.line = "\(who): paused\(why), can reconnect in \(remainingText(wait)) (at \(clockText(w.reconnectAt)))"
        }
        // Disabled or expired refuses it whatever its window says (the daemon's state too).
        let expired = peer.expiresMs.map { $0 <= now } ?? false
        if peer.disabled || expired || live?[peer.name] == .disabled || live?[peer.name] == .expired {
            let why = peer.disabled || live?[peer.name] == .disabled ? "disabled" : "expired"
            r.state = why
            r.line = "\(who): \(why), refused whatever its window (tunnelctl explain \(peer.name) says since when)"
        }
        // With a shared store: which gateway opened the window in force.
        if let g = stored?.gateway, r.allowedUntil != nil || r.reconnectAt != nil {
            r.windowGateway = g
            r.line += " [window opened on \(g)]"
        }
        return r
    }

    static let runExplain: Command.Body = { opts, console in
        let json = opts[.json]
        let config = try cliConfig(opts)
        let policies = opts[.policies]
        let local = opts[.local]
        var words: [String] = []
        while let w = opts.next() {
            if w.hasPrefix("--") { throw CLIError.usage("unknown option '\(w)'") }
            words.append(w)
        }
        guard !words.isEmpty else {
            throw CLIError.usage("usage: tunnelctl explain PEER | tunnelctl explain 'FLOW'\n  FLOW: \(PolicyFlow.syntax)")
        }
        if words.count == 1 && !words[0].contains(" ") && config.peer(named: words[0]) != nil {
            return try explainPeer(words[0], config: config, json: json, local: local, console)
        }
        if words.count == 1 && !words[0].contains(" ") && !words[0].contains("->") {
            _ = try configuredPeer(words[0], config)  // "no peer named …" (exit 1)
        }
        return try explainFlow(words.joined(separator: " "), config: config, policies: policies, json: json, console)
    }

    /// `explain PEER`: exit 0 when the peer is refused (the explanation follows), 1 when it is not
    /// (tunnelctl(8): 1 is the answer "no").
    static func explainPeer(_ name: String, config: TunnelConfig, json: Bool, local: Bool, _ console: Console) throws -> ExitCode {
        // With a shared store, Disabled / Expires as every gateway applies them.
        let (peer, from) = admitted(try configuredPeer(name, config), try sharedAdmissions(config))
        let now = cliNow()
        let daemon = try askIfRunning(config, .peers)
        let source = try WindowSource.open(config, local: local, live: daemon.flatMap(livePeerList))
        let noStore = source.local == nil && !source.isShared
        let live = try liveSessions(daemon)
        let session = try sessionReport(peer, config: config, source: source, live: live, now: now)
        var e = PeerExplanation(peer: name, refused: false, session: session)
        // The configuration refuses before the session rules do (docs/peers.md): Disabled, Expires.
        let expired = peer.expiresMs.map { $0 <= now } ?? false
        if peer.disabled || expired {
            e.refused = true
            e.reason = peer.disabled ? "disabled" : "expired"
            e.since = expired && !peer.disabled ? peer.expiresMs.map(isoText) : nil
            if json {
                console.print(try encodeJSON(e))
                return .ok
            }
            let whereSet = from.map { "on \($0.gateway) at \(dateTimeText($0.changedAt)), shared by every gateway" }
            if peer.disabled {
                console.print("\(name): refused — disabled \(whereSet ?? "in the configuration (Disabled = true")"
                    + "\(whereSet == nil ? "; " : " (")tunnelctl peer enable \(name))")
            } else {
                console.print("\(name): refused — expired at \(dateTimeText(peer.expiresMs!)) (Expires \(whereSet ?? "in the configuration"))")
            }
            return .ok
        }
        // Disabled and Expires come from the configuration; a pause only from the store.
        if noStore { return noStoreAnswer("explain", config, json: json, console, peer: name) }
        if session.state == "paused", let w = try source.window(name)?.window {
            e.refused = true
            // Which limit ended the window: its quota when the window's use reached one (the rule
            // tunneld applied, PeerLimits.quotaReached), else its Session time.
            let limits = config.limits(of: peer, tier: try source.tier(of: peer))
            let why = WatchdogRules.pauseReason(used: ByteUse(up: w.usedUp, down: w.usedDown), limits: limits)
            let byQuota = why == .quota
            e.reason = why.text
            e.since = isoText(w.allowedUntil)
            e.until = isoText(w.reconnectAt)
            e.secondsLeft = session.secondsToReconnect
            let rows = try source.pauseRefusals(name, allowedUntil: w.allowedUntil)
            e.attempts = rows.reduce(0) { $0 + $1.count }
            e.lastAttempt = rows.map(\.lastAt).max().map(isoText)
            if json {
                console.print(try encodeJSON(e))
                return .ok
            }
            if byQuota {
                console.print("\(name): refused — quota pause: its window ended at \(clockText(w.allowedUntil)) when its quota was used (\(session.quota ?? "?"))")
            } else {
                // The window as it was opened (under its tier then), not the length the tier in force
                // would give: its opening time when the store has it.
                let length = source.openedAt(name).map { "\(remainingText((w.allowedUntil - $0) / 1000)) " } ?? ""
                console.print("\(name): refused — free-tier pause: its \(length)session window ended at \(clockText(w.allowedUntil))")
            }
            console.print("  limits    \(session.limits)")
            console.print("  since     \(dateTimeText(w.allowedUntil))")
            console.print("  until     \(dateTimeText(w.reconnectAt)) (can reconnect in \(remainingText(session.secondsToReconnect ?? 0)))")
            if let last = rows.map(\.lastAt).max() {
                console.print("  attempts  \(e.attempts) handshake\(e.attempts == 1 ? "" : "s") refused, last at \(dateTimeText(last))")
            } else {
                console.print("  attempts  none yet")
            }
            return .ok
        }
        if json {
            console.print(try encodeJSON(e))
        } else {
            console.print("\(name): not refused")
            console.print(session.line)
            console.print("limits: \(session.limits)")
        }
        return .failure
    }
}

/// `session --json` (one object per peer; fields documented in docs/session.md).
struct SessionReport: Encodable {
    var peer: String
    var tier: String
    /// `connected`, `disconnected` or `paused`.
    var state: String
    /// True for free peers (a window and a pause apply).
    var limited: Bool
    /// False when tunneld was not running (connection state from the store only).
    var daemonRunning: Bool
    /// FreeSession in seconds.
    var windowSeconds: Int64
    var allowedUntil: String?
    var reconnectAt: String?
    var secondsLeft: Int64?
    var secondsToReconnect: Int64?
    /// The limits in force, as `PeerLimits.summary` writes them.
    var limits = ""
    /// With a quota: bytes used in the window (as of tunneld's last pass) and `312.0 MiB of 1GiB used`.
    var quotaUsedUp: UInt64?
    var quotaUsedDown: UInt64?
    var quota: String?
    /// With a shared store: the gateway that opened the window in force (its GatewayName).
    var windowGateway: String?
    /// The text line (not encoded).
    var line = ""

    enum CodingKeys: String, CodingKey {
        case peer, tier, state, limited, daemonRunning, windowSeconds, allowedUntil, reconnectAt, secondsLeft, secondsToReconnect
        case limits, quotaUsedUp, quotaUsedDown, quota, windowGateway
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(peer, forKey: .peer)
        try c.encode(tier, forKey: .tier)
        try c.encode(state, forKey: .state)
        try c.encode(limited, forKey: .limited)
        try c.encode(daemonRunning, forKey: .daemonRunning)
        try c.encode(windowSeconds, forKey: .windowSeconds)
        try c.encode(allowedUntil, forKey: .allowedUntil)
        try c.encode(reconnectAt, forKey: .reconnectAt)
        try c.encode(secondsLeft, forKey: .secondsLeft)
        try c.encode(secondsToReconnect, forKey: .secondsToReconnect)
        try c.encode(limits, forKey: .limits)
        try c.encode(quotaUsedUp, forKey: .quotaUsedUp)
        try c.encode(quotaUsedDown, forKey: .quotaUsedDown)
        try c.encode(quota, forKey: .quota)
        try c.encode(windowGateway, forKey: .windowGateway)
    }
}

/// `explain PEER --json`.
struct PeerExplanation: Encodable {
    var peer: String
    var refused: Bool
    var reason: String?
    var since: String?
    var until: String?
    var secondsLeft: Int64?
    var attempts: Int64 = 0
    var lastAttempt: String?
    var session: SessionReport

    init(peer: String, refused: Bool, session: SessionReport) {
        self.peer = peer
        self.refused = refused
        self.session = session
    }

    enum CodingKeys: String, CodingKey { case peer, refused, reason, since, until, secondsLeft, attempts, lastAttempt, session }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(peer, forKey: .peer)
        try c.encode(refused, forKey: .refused)
        try c.encode(reason, forKey: .reason)
        try c.encode(since, forKey: .since)
        try c.encode(until, forKey: .until)
        try c.encode(secondsLeft, forKey: .secondsLeft)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(lastAttempt, forKey: .lastAttempt)
        try c.encode(session, forKey: .session)
    }
}

/// Type-erased Encodable (one object or a list from the same command).
struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

extension Tunnelctl {
    /// `tunnelctl peers` while tunneld is not running: configured peers, tiers (with the store's
    /// overrides), windows and the last session from the store. Says so on stderr; exit 0.
    static func peersFromStore(_ config: TunnelConfig, json: Bool, _ console: Console) throws -> ExitCode {
        guard let store = try CLIStore.read(config) else { return noStoreAnswer("peers", config, json: json, console) }
        console.error("note: tunneld is not running; showing the configuration and the store (no live handshakes or counters)")
        let now = cliNow()
        let tiers = try WindowSource.open(config, local: false, localOption: false)
        var out: [PeerStatus] = []
        for p in config.peers {
            let facts = tiers.tierFacts(of: p)
            let tier = facts.inForce
            let limits = config.limits(of: p, tier: tier)
            let w = limits.isWindowed ? try store.window(peer: p.name) : nil
            let last = try store.sessions(peer: p.name, limit: 1).first
            var s = PeerStatus(name: p.name, publicKey: p.publicKey.base64, tier: tier, endpoint: nil,
                               lastHandshakeMs: last.map { $0.endedAt ?? $0.startedAt },
                               rxBytes: UInt64(max(0, last?.rxBytes ?? 0)), txBytes: UInt64(max(0, last?.txBytes ?? 0)),
                               session: .disconnected, allowedUntilMs: w?.allowedUntil, reconnectAtMs: w?.reconnectAt,
                               allowedIPs: p.allowedIPs.map(\.description))
            if case .paused = WatchdogRules.phase(now: now, limits: limits, window: w?.dates) { s.session = .paused }
            s.limits = limits
            s.quotaUsed = limits.hasQuota ? ByteUse(up: w?.usedUp ?? 0, down: w?.usedDown ?? 0) : nil
            s.configuredTier = facts.configured
            s.tierOrigin = facts.origin
            s.tierSinceMs = facts.overrideSince
            s.lapsedTier = facts.lapsed
            out.append(s)
        }
        if json {
            console.print(try encodeJSON(out.map(PeerJSON.init)))
        } else {
            console.print(renderPeers(out, now: now))
        }
        return .ok
    }
}
