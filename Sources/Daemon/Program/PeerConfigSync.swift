import Config
import ControlProtocol
import Core
import Engine
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Runtime
import Synchronization

/// Keeps the running peers and `tunneld.conf` one record (docs/peers.md). `reload`
/// (SIGHUP, `tunnelctl reload`, every `tunnelctl peer` edit) re-reads the file and applies it like
/// `wg syncconf`; `uapiSet` (`wg set`, `wg setconf`, `wg addconf`) writes peer changes back to the
/// file atomically first (`ConfigRewriter.applyUAPI`, `AtomicFile`) and then applies the file the
/// same way, so a peer added over the UAPI survives a restart and `wg set … remove` removes it for
/// good. Both take one lock, so a reload and a `wg set` never interleave; both end with the
/// interface routes synced to the peers.
final class PeerConfigSync: Sendable {
    let configPath: String
    let interface: InterfaceConfig
    let engine: GatewayEngine
    let sessions: SessionService
    /// The kernel routes to keep in step (nil: no kernel interface, as in tests).
    let routes: InterfaceRoutes?
    let log: Logger
    /// Applies a reloaded `[Interface]`'s listeners (`StatusListen`, `MetricsListen`); returns
    /// the warnings for the reply (a listener that could not move).
    let applyListeners: @Sendable (InterfaceConfig) -> [String]
    /// The peers of the config applied last (what the next reload's changes are told against);
    /// the lock a reload and a `wg set` share.
    private let lock: Mutex<[PeerConfig]>

    /// `peers`: the config's peers tunneld started with (already applied).
    init(configPath: String, interface: InterfaceConfig, engine: GatewayEngine, sessions: SessionService,
         routes: InterfaceRoutes?, log: Logger, peers: [PeerConfig] = [],
         applyListeners: @escaping @Sendable (InterfaceConfig) -> [String] = { _ in [] }) {
        lock = Mutex(peers)
        self.configPath = configPath
        self.interface = interface
        self.engine = engine
        self.sessions = sessions
        self.routes = routes
        self.log = log
        self.applyListeners = applyListeners
    }

    /// The whole config again: peers applied like `wg syncconf`, disabled/expired peers to the
    /// watchdog, `StatusListen`/`MetricsListen` moved, the policy reloaded. A config with errors changes nothing. `applied` is false
    /// when the config or the policy was refused (the metrics count it as a reload error).
    func reload() -> (reply: ControlResponse, applied: Bool) {
        lock.withLock { applied in
            let next: TunnelConfig
            do {
                next = try TunnelConfig.load(path: configPath)
            } catch {
                log.error("reload: \(configPath) has errors; nothing changed:\n\(error)")
                return (.failure(.invalidConfig, "\(error)"), false)
            }
            var warnings = next.warnings.map(\.description)
            if next.interface.listenPort != interface.listenPort || next.interface.addresses != interface.addresses
                || next.interface.name != interface.name
            {
                warnings.append("\(configPath): [Interface] Name, ListenPort or Address changed: they apply at the next restart")
            }
            let diff = applyPeersLocked(next, applied: &applied)
            warnings += applyListeners(next.interface)
            let policyReply = engine.reloadPolicy(directory: interface.policyDirectory)
            warnings += policyReply.warnings.map(\.description)
            let policyErrors = policyReply.succeeded ? [] : policyReply.errors.map { "\($0)" }
            if policyReply.succeeded {
                // Peers refused their gateway's status page, resolver or ping (the addresses are
                // the running interface's: what `gateway` is bound to until a restart).
                var running = next
                running.interface.addresses = interface.addresses
                warnings += engine.policy.compiled.refusals(of: running.gatewayProbes).map { "policy: \($0)" }
            }
            let reply = ReloadReply(added: diff.added, removed: diff.removed, changes: diff.changes, warnings: warnings,
                                    policyGeneration: engine.policy.generation, policyErrors: policyErrors)
            log.notice("reload: " + Self.summary(reply))
            for w in warnings { log.warning("reload: \(w)") }
            for e in policyErrors { log.error("reload: policy: \(e) (the running policy, generation \(reply.policyGeneration), is kept)") }
            return (.reload(reply), policyReply.succeeded)
        }
    }

    /// `set=1`: peer changes are written to the file first (refused, with nothing changed, when
    /// the file cannot be read, parsed or written), then the file is applied, then what the file
    /// does not hold (endpoints, device checks) goes to the engine.
    func uapiSet(_ request: UAPISetRequest, listenPort: UInt16) -> UAPIError? {
        lock.withLock { applied in
            var deviceOnly = request
            deviceOnly.peers = []
            deviceOnly.replacePeers = false
            if let refused = engine.uapiSet(deviceOnly, listenPort: listenPort) { return refused }
            guard !request.peers.isEmpty || request.replacePeers else { return nil }
            let base = PathText.directory(of: configPath)
            let bytes: [UInt8]
            do { bytes = try Sys.readFile(configPath, limit: TunnelConfig.maximumFileSize) } catch {
                return .io("cannot read \(configPath) to write the peers back: \(error); nothing changed")
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let writeBack: UAPIWriteBack
            do {
                let current = try TunnelConfig.parse(contents: bytes, file: configPath, baseDirectory: base)
                writeBack = try ConfigRewriter.applyUAPI(request, to: text, config: current, nowMs: engine.clock.wallMilliseconds())
            } catch let e as ConfigErrors {
                return .invalid("\(configPath) has errors, so the peers cannot be written back; nothing changed (fix it, then tunnelctl reload):\n\(e)")
            } catch {
                return .invalid("\(error); nothing changed")
            }
            if writeBack.changesFile {
                let next: TunnelConfig
                do {
                    next = try TunnelConfig.parse(writeBack.text, file: configPath, baseDirectory: base)
                } catch {
                    return .invalid("the change would leave \(configPath) with errors, so nothing changed:\n\(error)")
                }
                do {
                    try AtomicFile.replace(configPath, contents: Array(writeBack.text.utf8))
                } catch {
                    return .io("cannot write \(configPath): \(error); nothing changed")
                }
                let diff = applyPeersLocked(next, applied: &applied)
                log.notice("uapi: written back to \(configPath): " + Self.summary(
                    ReloadReply(added: writeBack.added, removed: writeBack.removed, changed: writeBack.changed, policyGeneration: 0))
                    + " (applied: \(Self.summary(ReloadReply(added: diff.added, removed: diff.removed, changes: diff.changes, policyGeneration: 0))))")
            }
            var rest = request
            rest.replacePeers = false
            rest.peers = request.peers.filter { !$0.remove }
            if request.replacePeers {
                let named = Set(request.peers.map(\.publicKey.bytes))
                for p in engine.peers where p.origin == .runtime && !named.contains(p.publicKey.bytes) { engine.removePeer(p.handle) }
            }
            let refused = engine.uapiSet(rest, listenPort: listenPort)
            routes?.sync(engine.registry.current)
            return refused
        }
    }

    /// Applies `config`'s peers (lock held): the engine's peers, the watchdog's restrictions,
    /// the interface routes. Returns what changed against `applied` (the config applied last,
    /// which becomes `config`'s peers): the file's changes, each named, with any peer the engine
    /// added or removed beyond them (a peer added over the UAPI and not in the file before).
    private func applyPeersLocked(_ config: TunnelConfig, applied: inout [PeerConfig])
        -> (added: [String], removed: [String], changes: [PeerChange])
    {
        engine.registry.setTierClasses(config.tiers)
        let engineDiff = engine.applyConfigPeers(config.peers)
        sessions.configPeersChanged(config.peers)
        routes?.sync(engine.registry.current)
        var diff = PeerChange.between(applied, config.peers)
        applied = config.peers
        // A configured tier changed under an override: the reply says the override still decides.
        let directory = engine.registry.current
        for i in diff.changes.indices where diff.changes[i].kind == .tier {
            if let o = directory.named(diff.changes[i].peer)?.tierOverride {
                diff.changes[i].note = "the override \(o.tier) set by tunnelctl peer tier stays in force"
            }
        }
        let replaced = Set(diff.changes.filter { $0.kind == .publicKey }.map(\.peer))
        for name in engineDiff.added where !diff.added.contains(name) && !replaced.contains(name) { diff.added.append(name) }
        for name in engineDiff.removed where !diff.removed.contains(name) && !replaced.contains(name) { diff.removed.append(name) }
        Sys.trimHeap()  // the reload's temporaries (a parse of every peer) back to the kernel
        return diff
    }

    /// The log line's text: the counts, then every change named (`ReloadReply.peerText`).
    static func summary(_ r: ReloadReply) -> String {
        "\(r.added.count) peer(s) added, \(r.removed.count) removed, \(r.changed.count) changed"
            + (r.isUnchanged ? "" : ": " + r.peerText)
    }
}
