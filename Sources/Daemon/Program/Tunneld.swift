// `tunneld`: the program around the engine — arguments, config, interface bring-up, servers,
// signals, tear-down. tunneld/main.swift only calls `Tunneld.main`.
import Engine
import SystemIO
import Core
import Synchronization
import Config
import ControlProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import Packet
import Policy
import Runtime
import Store
import WireGuard

/// The gateway daemon's entry point and life cycle.
public enum Tunneld {
    public static let version = ProductVersion.current

    static let usage = """
        usage: tunneld [--config PATH] [--foreground] [--check-config] [--verbose]
               tunneld --version | --help

          --config PATH    configuration file (default \(TunnelConfig.defaultPath))
          --foreground     log to stderr, with syslog priority prefixes (journald reads them) unless
                           stderr is a terminal; this is also the default: tunneld never forks, run it
                           under systemd or a supervisor
          --check-config   parse the configuration and the policy directory, print problems, exit
          --verbose        also log debug messages
          --version, -V    print the version and exit
          --help, -h       print this and exit
        """

    /// Runs the daemon with `arguments` (without the program name); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        Sys.tuneHeap()
        var configPath = TunnelConfig.defaultPath
        var checkOnly = false
        var verbose = false
        var i = 0
        while i < arguments.count {
            switch arguments[i] {
            case "--config":
                guard i + 1 < arguments.count else { return fail("--config needs a path\n\n\(usage)", 2) }
                configPath = arguments[i + 1]
                i += 1
            case "--foreground": break
            case "--check-config": checkOnly = true
            case "--verbose": verbose = true
            case "--version", "-V", "version":
                print("tunneld \(version)")
                return 0
            case "--help", "-h", "help":
                print(usage)
                return 0
            default:
                return fail("unknown argument '\(arguments[i])'\n\n\(usage)", 2)
            }
            i += 1
        }
        // --check-config is a report to read, not a log: no timestamps on its lines.
        let log = Logger.standardError(minimum: verbose ? .debug : .info, timestamps: checkOnly ? false : nil)

        let config: TunnelConfig
        do {
            config = try TunnelConfig.load(path: configPath)
        } catch {
            // The --check-config hint only helps when there is a file to check (papercut: it was circular).
            let hint = !checkOnly && FileManager.default.fileExists(atPath: configPath)
            return fail(hint ? "\(error)\n(tunneld --check-config --config \(configPath) shows every problem)" : "\(error)", 1)
        }
        for w in config.warnings { log.warning("\(w)") }
        if let problem = StatusPageServer.addressProblem(config.interface) { return fail(problem, 1) }
        // Notes (wg-quick keys accepted as they are, names taken from comments): --check-config
        // prints them on stdout; a start logs them at info.
        for n in config.notes {
            if checkOnly { print("note: \(n)") } else { log.info("\(n)") }
        }
        let loaded: (PolicySet, CompiledPolicy)
        switch ActivePolicy.load(directory: config.interface.policyDirectory, gateway: config.interface.gatewayAddresses) {
        case .success(let p): loaded = p
        case .failure(let f):
            return fail("policy \(config.interface.policyDirectory) has errors\(checkOnly ? "" : "; refusing to start"):\n\(f)", 1)
        }
        for w in loaded.0.warnings { log.warning("policy: \(w)") }
        // A rule naming a peer no [Peer] section has never matches it: an error to --check-config,
        // a warning at start (a peer of that name may still be added at runtime).
        let unknownPeers = loaded.0.unknownPeerReferences(configured: config.peers.map(\.name), severity: checkOnly ? .error : .warning)
        if checkOnly && !unknownPeers.isEmpty {
            return fail("policy \(config.interface.policyDirectory) names peers that \(configPath) does not configure:\n"
                + unknownPeers.map(\.description).joined(separator: "\n"), 1)
        }
        for w in unknownPeers { log.warning("policy: \(w)") }
        // Peers refused their own gateway's status page, resolver or ping see only timeouts:
        // a warning (the policy may mean it), never a refusal to start.
        for w in loaded.1.refusals(of: config.gatewayProbes) { log.warning("policy: \(w)") }
        if checkOnly {
            print("\(configPath): OK — interface \(config.interface.name), \(config.peers.count) peer(s), "
                + "policy \(config.interface.policyDirectory): \(loaded.1.rules.count) rule(s) in \(loaded.0.files.count) file(s)")
            return 0
        }
        do {
            return try run(config: config, path: configPath, policy: loaded, log: log)
        } catch {
            log.error("\(error)")
            return 1
        }
    }

    static func fail(_ message: String, _ code: Int32) -> Int32 {
        Sys.writeText(2, "tunneld: " + message + "\n")
        return code
    }

    /// Brings the gateway up, serves until SIGTERM/SIGINT, tears everything down; runs the
    /// wg-quick hooks around that (`PreUp` before the interface exists, `PostDown` after it is
    /// gone; `PostUp` and `PreDown` in ``serve(config:path:policy:log:up:)``).
    static func run(config: TunnelConfig, path configPath: String, policy: (PolicySet, CompiledPolicy), log: Logger) throws -> Int32 {
        let iface = config.interface
        if let failed = HookRunner.run(.preUp, iface, name: iface.name, configPath: configPath, log: log) {
            return fail(failed, 1)
        }
        var up = false
        let code = try serve(config: config, path: configPath, policy: policy, log: log, up: &up)
        if up { _ = HookRunner.run(.postDown, iface, name: iface.name, configPath: configPath, log: log) }
        return code
    }

    /// The daemon between `PreUp` and `PostDown`; `up` is set once `PostUp` succeeded (then the
    /// `Down` hooks run at the end).
    static func serve(config: TunnelConfig, path configPath: String, policy: (PolicySet, CompiledPolicy), log: Logger,
                      up: inout Bool) throws -> Int32 {
        let iface = config.interface
        guard let key = iface.privateKey, let device = WireGuardDevice(privateKey: key.bytes, mtu: iface.mtu) else {
            return fail("the private key is missing or invalid", 1)
        }
        for dir in [iface.runtimeDirectory, iface.stateDirectory] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        }
        // Signals first, so a SIGTERM during bring-up still tears down cleanly.
        let signals = try SignalWatcher(signals: [SIGHUP, SIGTERM, SIGINT])

        // TUNNELD_OFFLOAD=off: plain TUN reads/writes and one UDP datagram per message (for
        // comparison benchmarks and for diagnosing a kernel that mishandles offloads).
        let offload = ProcessInfo.processInfo.environment["TUNNELD_OFFLOAD"] != "off"
        let tun = try LinuxTun(name: iface.name, mtu: iface.mtu, offload: offload)
        defer { tun.release() }  // last: the interface goes, then PostDown runs (in run)
        log.info("interface \(tun.name): offloads \(tun.offloadDescription)\(offload ? "" : " (TUNNELD_OFFLOAD=off)")")
        let netlink = try NetlinkInterfaceConfigurator()
        let addresses = iface.addresses
        do {
            try netlink.bringUp(name: tun.name, mtu: iface.mtu, addresses: addresses,
                                routes: InterfaceRoutes.wanted(config.peers.flatMap(\.allowedIPs), addresses: addresses))
        } catch {
            log.error("interface \(tun.name): \(error)")
            _ = netlink.tearDown()
            return 1
        }
        let routes = InterfaceRoutes(netlink, addresses: addresses, log: log)
        defer {
            for e in routes.tearDown() { log.warning("tear-down: \(e)") }
        }
        for step in routes.journal { log.info("interface: \(step)") }

        // TUNNELD_UDP_GRO=off keeps UDP GSO but receives datagram by datagram (benchmarks compare).
        let environment = ProcessInfo.processInfo.environment
        let bind = try LinuxDatagramBind(port: iface.listenPort, segmentation: offload,
                                         coalescing: offload && environment["TUNNELD_UDP_GRO"] != "off")
        log.info("listening on UDP port \(bind.port) (\(bind.buffers)\(offload ? ", UDP GSO" : "")\(bind.receiveCoalescing ? ", UDP GRO" : ""))")
        var options = Tunneld.gatewayOptions(iface)
        options.testWedgeFile = environment["TUNNELD_TEST_WEDGE_FILE"]  // test hook: e2e systemd.sh
        let engine = GatewayEngine(device: device, tun: tun, bind: bind, clock: SystemClock(), policy: policy, options: options,
                                   log: log)
        // BEGIN session/history: store, history recorder, free-session watchdog. Must open
        // the store before DaemonMarkers writes its start marker: crash recovery closes leftover
        // sessions at the last proven-alive time, which a fresh marker would move to now.
        // TUNNELD_HISTORY=off turns flow recording off (benchmarks); the watchdog always runs.
        // Store = postgresql://…: windows, quota use and tier overrides shared with the other
        // gateways naming the same database; each thread opens its own connection.
        let gatewayName = iface.gatewayNameInForce
        var sharedConnect: (@Sendable () throws -> any SharedState)? = nil
        if iface.store.isShared {
            let setting = iface.store, passFile = iface.storePassFile
            sharedConnect = { @Sendable () throws -> any SharedState in
                try setting.open(passFile: passFile, timeoutMs: Tunneld.sharedTimeoutMs)!
            }
        }
        if sharedConnect != nil { log.info("shared store: \(iface.store.text) as gateway \(gatewayName)") }
        let sessions = SessionService(engine: engine, interface: iface, log: log,
                                      recordFlows: ProcessInfo.processInfo.environment["TUNNELD_HISTORY"] != "off",
                                      shared: sharedConnect, gateway: gatewayName, backend: iface.store.backendName)
        defer { sessions.stop() }
        // END session/history
        engine.registry.setTierClasses(config.tiers)
        _ = engine.applyConfigPeers(config.peers)  // one batch: a start with 10,000 peers stays linear
        sessions.configPeersChanged(config.peers)  // disabled and expiring peers
        try sessions.start()  // session/history: refuse paused peers before traffic
        // ---- live ring and capture (docs/ring.md, docs/capture.md) ----
        let observe = Observe.start(config: config, engine: engine, log: log)
        defer { observe.stop() }
        sessions.history.captureLocation.withLock { lookup in
            let observer = observe.observer
            lookup = { id in
                observer.firstCaptureLocation(flowID: id)
            }
        }
        // ---- end live ring and capture ----
        engine.start()
        defer { engine.stop() }

        // ── history: automatic markers and scheduled prune (DaemonMarkers, PruneSchedule) ──
        // Both use connections of their own on state.db (a marker about a full writer queue must
        // not wait in that queue). Session ends are marked by the watchdog itself.
        let wallMs: @Sendable () -> Int64 = { SystemClock().wallMilliseconds() }
        var history: (DaemonMarkers, PruneSchedule)?
        do {
            if let store = try? StateStore(path: iface.storePath) { _ = PruneSchedule.loadSettings(store, log: log) }
            history = (try DaemonMarkers(storePath: iface.storePath, log: log, now: wallMs,
                                         droppedCount: { sessions.history.droppedRecords }),
                       try PruneSchedule(storePath: iface.storePath, captureDirectory: iface.stateDirectory + "/capture",
                                         log: log, now: wallMs, shared: sharedConnect,
                                         settingsIntervalMs: environment[PruneSchedule.settingsIntervalVariable].flatMap(Int.init) ?? 60_000))
        } catch {
            log.error("store \(iface.storePath): \(error); running without markers and scheduled prune")
        }
        let markers = history?.0, pruneSchedule = history?.1
        markers?.start()
        markers?.daemonStarted(version: version, pid: getpid(), generation: engine.policy.generation,
                               ruleCount: policy.1.rules.count, policyDirectory: iface.policyDirectory)
        engine.policyReloadHook.withLock { hook in
            hook = { generation, rules, directory in markers?.policyReloaded(generation: generation, ruleCount: rules, directory: directory) }
        }
        pruneSchedule?.start()
        defer {
            pruneSchedule?.stop()
            markers?.daemonStopping(reason: "shutdown")
            markers?.stop()
        }
        // ── end history ──

        let addressTexts = iface.addresses.map(\.description)
        // StatusListen: each peer's own status page (off unless configured; started below).
        let statusPage = StatusPageServer(engine: engine, sessions: sessions)
        let statusReply: @Sendable () -> StatusReply = {
            var s = engine.statusReply(interface: tun.name, addresses: addressTexts, listenPort: bind.port, version: version,
                                       storeQueueDrops: sessions.history.droppedRecords, store: sessions.storeHealth())
            s.statusPage = statusPage.counters
            s.shared = sessions.sharedHealth()
            if s.shared != nil, let origin = pruneSchedule?.retentionOrigin {
                let (from, by, at): (String, String?, Int64?)
                switch origin {
                case .local: (from, by, at) = ("local", nil, nil)
                case let .shared(gateway, t): (from, by, at) = ("shared", gateway, t)
                case let .lastShared(gateway, t): (from, by, at) = ("last-shared", gateway, t)
                }
                s.shared?.retentionFrom = from
                s.shared?.retentionSetBy = by
                s.shared?.retentionSetAtMs = at
            }
            return s
        }
        let metrics = DaemonMetrics(engine: engine, sessions: sessions, status: statusReply)
        let systemd = SystemdService(engine: engine, log: log, environment: environment) {
            let s = statusReply()
            return "\(s.peersConnected) of \(s.peersConfigured) peer(s) connected; policy generation \(s.policy.generation)"
        }
        defer { systemd.stopping() }
        // The whole config again, and `wg set` written back to it: one owner of the
        // running peers' record (PeerConfigSync), routes synced after each change.
        // StatusListen and MetricsListen: started below, moved or stopped by every reload.
        let metricsListen = ReloadableListener(key: "MetricsListen")
        let applyListeners: @Sendable (InterfaceConfig) -> [String] = { next in
            var warnings: [String] = []
            if let problem = StatusPageServer.addressProblem(next) {
                warnings.append("\(problem); the status page is unchanged")
            } else {
                let change = statusPage.apply(next.statusListen, device: tun.name)
                if let w = Self.listenerChanged(change, key: "StatusListen", what: "status page", log: log,
                                                url: { "http://\($0)/ to each peer, inside the tunnel" }) { warnings.append(w) }
            }
            let change = metricsListen.apply(next.metricsListen) { e throws(SystemError) in try metrics.listen(on: e, log: log) }
            if let w = Self.listenerChanged(change, key: "MetricsListen", what: "metrics", log: log,
                                            url: { "http://\($0)/metrics" }) { warnings.append(w) }
            return warnings
        }
        let peerSync = PeerConfigSync(configPath: configPath, interface: iface, engine: engine, sessions: sessions,
                                      routes: routes, log: log, peers: config.peers, applyListeners: applyListeners)
        let reloadConfig: @Sendable () -> ControlResponse = {
            systemd.reloading()
            defer { systemd.reloaded() }
            let (reply, applied) = peerSync.reload()
            metrics.noteReload(ok: applied)
            return reply
        }
        let handler = ControlHandler(engine: engine, sessions: sessions, observe: observe, policyDirectory: iface.policyDirectory,
                                     log: log, status: statusReply, metricsText: { metrics.text() },
                                     policyReloaded: { metrics.noteReload(ok: $0) }, reloadConfig: reloadConfig)
        // One thread serves both sockets: tunnelctl's control protocol and wg's UAPI.
        let sockets = try UnixSocketServer(endpoints: [
            ControlServer.endpoint(path: iface.controlSocketPath, log: log, handler: handler.respond),
            UAPIServer.endpoint(
                interfaceName: tun.name,
                get: { engine.uapiSnapshot(privateKey: key, listenPort: bind.port) },
                set: { peerSync.uapiSet($0, listenPort: bind.port) },
                log: { log.warning("uapi: \($0)") }),
        ])
        defer { sockets.stop() }
        // MetricsListen (Prometheus /metrics) and StatusListen (each peer's own page): off unless
        // configured; a listener that cannot bind is logged and the daemon runs without it.
        _ = applyListeners(iface)
        defer {
            metricsListen.stop()
            statusPage.stop()
        }
        if let failed = HookRunner.run(.postUp, iface, name: tun.name, configPath: configPath, log: log) {
            log.error(failed)
            return 1
        }
        up = true
        log.notice("tunneld \(version) up: interface \(tun.name), \(config.peers.count) peer(s), "
            + "policy generation \(engine.policy.generation) (\(policy.1.rules.count) rules)")
        // Interface up, routes set, control, UAPI and metrics sockets listening: ready. The start's
        // temporaries (parsing and diffing thousands of peers) go back to the kernel first.
        Sys.trimHeap()
        systemd.ready()

        let wake = try EventNotifier()
        while true {
            guard let signal = try signals.wait(timeoutMilliseconds: -1, shutdown: wake) else { continue }
            if signal == SIGHUP {
                _ = reloadConfig()  // logs what it did or why it changed nothing
                continue
            }
            log.notice("signal \(signal): shutting down")
            break
        }
        _ = HookRunner.run(.preDown, iface, name: tun.name, configPath: configPath, log: log)
        return 0
    }
}

extension Tunneld {
    /// Logs what a listener's `apply` did (`what`: "metrics"; `url` renders where it serves) and
    /// returns the warning for a reload's reply when it could not listen where the config says.
    static func listenerChanged(_ change: ReloadableListener.Change, key: String, what: String, log: Logger,
                                url: (Endpoint) -> String) -> String?
    {
        switch change {
        case .unchanged:
            return nil
        case .started(let e):
            log.info("\(what): serving \(url(e))")
        case .moved(let from, let to):
            log.notice("\(what): moved from \(from) to \(to) (\(key)); serving \(url(to))")
        case .stopped(let e):
            log.notice("\(what): stopped serving on \(e) (\(key) is off)")
        case .failed(let wanted, let error, let keeping):
            let message = "\(what): cannot listen on \(wanted) (\(key)): \(error); check that no other process uses the "
                + "port and that the address is on this host; "
                + (keeping.map { "still serving on \($0)" } ?? "running without the \(what)")
            log.error(message)
            return message
        }
        return nil
    }

    /// The engine's tunables from `[Interface]` (host learning: `QUIC`, `HostWait`, `DNSTTLFloor`,
    /// `DNSTTLCeiling`; see tunneld.conf(5)).
    static func gatewayOptions(_ iface: InterfaceConfig) -> GatewayOptions {
        var o = GatewayOptions()
        o.quic = QUICHostMode(rawValue: iface.quic) ?? .inspect
        o.hostPendingTimeoutMs = Int64(iface.hostWait.components.seconds * 1000
                                       + iface.hostWait.components.attoseconds / 1_000_000_000_000_000)
        func seconds(_ d: Duration) -> UInt32 { UInt32(clamping: d.components.seconds) }
        o.dnsTTLFloor = seconds(iface.dnsTTLFloor)
        o.dnsTTLCeiling = max(o.dnsTTLFloor, seconds(iface.dnsTTLCeiling))
        o.policyGateway = iface.gatewayAddresses
        return o
    }
}

extension Tunneld {
    /// Deadline of a shared-store statement (ms): a connect that opens a window waits at most this
    /// long for the database, then opens it alone (reconciled later).
    static let sharedTimeoutMs = 250
}
