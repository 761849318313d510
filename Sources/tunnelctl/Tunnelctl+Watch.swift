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
import LiveFeed
import Packet
import Runtime
import Synchronization

/// `tunnelctl watch`: the live feed of `RuntimeDirectory/live.ring` (docs/ring.md).
extension Tunnelctl {
    static let runWatch: Command.Body = { opts, console in
        let options = try WatchOptions.parse(opts)
        return try watch(options, console: console)
    }

    /// Options of `tunnelctl watch`.
    struct WatchOptions {
        var ringPath: String
        var json = false
        var peer: String?
        var blockedOnly = false
        /// Stop after this many records that pass `--peer` and `--blocked` (printed, or added to
        /// the view); nil = until SIGINT.
        var count: Int?
        /// Stop after this long (milliseconds) even when fewer than `count` records came.
        var timeoutMs: Int64?
        /// Force the line format even on a terminal.
        var lines = false
        /// Force the refreshing view even when piped.
        var view = false

        static func parse(_ opts: ParsedOptions) throws -> WatchOptions {
            let json = opts[.json]
            let lines = opts[.lines]
            let view = opts[.view]
            let blocked = opts[.blocked]
            let peer = opts[.peer]
            let count = opts[.count]
            let timeout = opts[.timeout]
            let ring = opts[.ring]
            let configPath = opts[.config]
            try opts.finish()
            // The configuration is read unless --ring alone says where the feed is.
            let config = try (configPath != nil || ring == nil) ? cliConfig(path: configPath ?? TunnelConfig.defaultPath) : nil
            let path = ring ?? config!.interface.ringPath
            if let peer {
                // Without a configuration, the running tunneld next to the ring knows its peers.
                let live = config == nil ? WatchPeers.names(ringPath: path) : nil
                try checkLivePeer(peer, configured: config?.peers.map(\.name), others: live)
            }
            return WatchOptions(ringPath: path, json: json, peer: peer, blockedOnly: blocked, count: count, timeoutMs: timeout,
                                lines: lines, view: view)
        }

        /// Whether `r` passes `--peer` and `--blocked`.
        func accepts(_ r: LiveRecord) -> Bool {
            if let peer, r.peerName.description != peer { return false }
            if blockedOnly && !(r.verdict != .allow || r.kind == .refusal) { return false }
            return true
        }
    }

    /// Set by SIGINT/SIGTERM; the loop polls it.
    static let interrupted = Atomic<Bool>(false)

    /// Runs the watch loop until SIGINT, `--count` records, or a fatal ring error.
    static func watch(_ o: WatchOptions, console: Console) throws -> ExitCode {
        interrupted.store(false, ordering: .relaxed)
        signal(SIGINT) { _ in Tunnelctl.interrupted.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in Tunnelctl.interrupted.store(true, ordering: .relaxed) }
        signal(SIGPIPE, SIG_IGN)
        // --count ends after N records: lines, unless the view is asked for by name.
        let live = o.view || (console.isTerminal && !o.json && !o.lines && o.count == nil)
        var view = WatchView()
        var said = ""
        func note(_ s: String) {
            guard s != said else { return }
            said = s
            if !live { console.error("tunnelctl watch: \(s)") }
            view.notice = s
        }
        let consumer = try attach(o.ringPath)
        // --json names the deciding rule: the ring carries its index in the running policy.
        var rules = WatchRules(ringPath: o.ringPath)
        var peers = WatchPeers(ringPath: o.ringPath)
        let encoder = JSONOutput.encoder(lines: true)
        if o.json { rules.refresh(now: SystemClock().monotonicNanoseconds()) }
        var buffer = [LiveRecord](repeating: LiveRecord(), count: 1024)
        var printed = 0
        var lastDraw = UInt64(0)
        var lastStatus = consumer.status
        // Poll instead of `wait`: a watcher that sleeps on the futex makes the daemon pay a wake-up
        // syscall per data-path batch, and batches are small at moderate rates. Polling every
        // 10 ms (50 ms for the view) costs the daemon nothing; the ring holds 65,536 records.
        let pollMs = live ? 50 : 10
        var lastCheck = SystemClock().monotonicNanoseconds()
        let deadline = o.timeoutMs.map { lastCheck &+ UInt64($0) * 1_000_000 }
        while !interrupted.load(ordering: .relaxed) {
            if let deadline, SystemClock().monotonicNanoseconds() >= deadline {
                // Fewer records than --count asked for is the answer "no" (exit 1).
                if let c = o.count, printed < c {
                    console.error("tunnelctl watch: \(printed) of \(c) record\(c == 1 ? "" : "s") within --timeout")
                    return .failure
                }
                return .ok
            }
            if consumer.available == 0 {
                Sys.sleep(milliseconds: pollMs)
                let now = SystemClock().monotonicNanoseconds()
                if consumer.available == 0, consumer.isProducerClosed || now &- lastCheck >= 100_000_000 {
                    lastCheck = now
                    if case .reattached(let generation) = consumer.checkReplacement() {
                        note("tunneld restarted: re-attached to the new live feed (generation \(generation))")
                        view.reattached()
                        if o.json { rules.refresh(now: now) }
                    }
                }
            }
            if consumer.status != lastStatus {
                lastStatus = consumer.status
                switch consumer.status {
                case .producerClosed: note("tunneld stopped; waiting for it to come back")
                case .fileMissing: note("\(o.ringPath) is gone; waiting for tunneld")
                case .rejected(let e): note("\(e); waiting for a valid live feed")
                case .attached: break
                }
            }
            while true {
                let n = buffer.withUnsafeMutableBufferPointer { consumer.read(into: $0) }
                if n == 0 { break }
                if o.json { rules.refreshIfStale(now: SystemClock().monotonicNanoseconds()) }
                for r in buffer[0..<n] where o.accepts(r) {
                    if live {
                        view.add(r)
                    } else {
                        console.print(o.json ? try jsonLine(r, rules: rules.table(for: r), encoder: encoder) : textLine(r))
                    }
                    printed += 1
                    if let c = o.count, printed >= c {
                        if live { console.print(view.render(nowNanoseconds: wallNanoseconds())) }
                        return .ok
                    }
                }
                if n < buffer.count { break }
            }
            if live {
                let now = SystemClock().monotonicNanoseconds()
                if now &- lastDraw >= 1_000_000_000 {
                    view.dropped = consumer.dropped
                    if let answer = peers.refreshIfStale(now: now) {
                        view.peers = answer.map { list in o.peer.map { name in list.filter { $0.name == name } } ?? list }
                    }
                    console.print(view.render(nowNanoseconds: wallNanoseconds()))
                    view.tick()
                    lastDraw = now
                }
            }
        }
        return .ok
    }

    /// The consumer of a running tunneld's live feed. No feed, one whose tunneld stopped, or one
    /// whose tunneld is gone (killed without closing it) is exit 3 at once: waiting would look
    /// like a quiet gateway. A file caught while tunneld creates it is tried again for a second.
    static func attach(_ path: String) throws -> RingConsumer {
        let notRunning = { (why: String) in
            CLIError(message: "tunneld is not running: \(why) (start it; watch follows it across restarts once attached)",
                     code: .daemonNotRunning)
        }
        var attempts = 0
        while true {
            do {
                let consumer = try RingConsumer(path: path, start: .latest)
                if consumer.isProducerClosed { throw notRunning("its live feed \(path) was closed when it stopped") }
                let pid = consumer.producerPID
                if pid > 0, kill(pid, 0) != 0, errno == ESRCH {
                    throw notRunning("the process that writes \(path) (pid \(pid)) is gone")
                }
                return consumer
            } catch let e as CLIError {
                throw e
            } catch let error as RingError {
                switch error {
                case .notFound:
                    throw notRunning("no live feed at \(path)")
                case .busy:
                    throw CLIError.failure("\(error)")
                default:
                    attempts += 1
                    if attempts >= 5 { throw CLIError.failure("\(error)") }
                    Sys.sleep(milliseconds: 200)
                }
            }
        }
    }

    static func wallNanoseconds() -> UInt64 {
        UInt64(clamping: SystemClock().wallNanoseconds())
    }

    // MARK: formats

    /// `2026-11-29T12:00:01.123456789Z` (UTC).
    static func timeText(_ ns: UInt64) -> String {
        var t = time_t(ns / 1_000_000_000)
        var tm = tm()
        gmtime_r(&t, &tm)
        let frac = String(ns % 1_000_000_000)
        let pad = String(repeating: "0", count: 9 - frac.count) + frac
        let year = String(tm.tm_year + 1900)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-" + TimeText.twoDigits(Int(tm.tm_mon) + 1)
            + "-" + TimeText.twoDigits(Int(tm.tm_mday)) + "T" + TimeText.twoDigits(Int(tm.tm_hour)) + ":" + TimeText.twoDigits(Int(tm.tm_min))
            + ":" + TimeText.twoDigits(Int(tm.tm_sec)) + "." + pad + "Z"
    }

    static func address(_ r: LiveRecord, source: Bool) -> String {
        let high = source ? r.sourceHigh : r.destinationHigh
        let low = source ? r.sourceLow : r.destinationLow
        if r.ipVersion == 6 { return IPAddress(v6High: high, low: low).description }
        return IPAddress(v4: UInt32(truncatingIfNeeded: low)).description
    }

    static func protocolName(_ p: UInt8) -> String { IPProtocol(rawValue: p).name }

    static func hasPorts(_ r: LiveRecord) -> Bool { r.ipProtocol == 6 || r.ipProtocol == 17 }

    static func endpoint(_ r: LiveRecord, source: Bool) -> String {
        let a = address(r, source: source)
        guard hasPorts(r) else { return a }
        let port = source ? r.sourcePort : r.destinationPort
        return r.ipVersion == 6 ? "[\(a)]:\(port)" : "\(a):\(port)"
    }

    /// tcpdump-style flags: `S` SYN, `F` FIN, `R` RST, `P` PSH, `.` ACK, `U` URG, `E` ECE, `W` CWR.
    static func flagsText(_ f: UInt8) -> String {
        var s = ""
        if f & 0x02 != 0 { s += "S" }
        if f & 0x01 != 0 { s += "F" }
        if f & 0x04 != 0 { s += "R" }
        if f & 0x08 != 0 { s += "P" }
        if f & 0x20 != 0 { s += "U" }
        if f & 0x40 != 0 { s += "E" }
        if f & 0x80 != 0 { s += "W" }
        if f & 0x10 != 0 { s += "." }
        return s.isEmpty ? "none" : s
    }

    static func peerText(_ r: LiveRecord) -> String {
        let name = r.peerName.description
        if !name.isEmpty { return name }
        return r.peerIndex == LiveRecord.noPeer ? "-" : "#\(r.peerIndex)"
    }

    /// One record as a line (the piped format):
    /// `TIME KIND DIR PEER PROTO SRC > DST len N [FLAGS] VERDICT rule R flow ID cap SEQ:OFF`.
    static func textLine(_ r: LiveRecord) -> String {
        var s = "\(timeText(r.timeNanoseconds)) \(r.kind)"
        switch r.kind {
        case .refusal:
            return s + " \(peerText(r)) reason \(RefusalCode.name(ofRaw: r.detail))"
        case .handshake:
            return s + " \(peerText(r))"
        case .flowHost:
            return s + " \(peerText(r)) host \(r.hostName ?? "") \(r.verdict?.name ?? "?") flow \(r.flowID)"
        default:
            break
        }
        if r.kind != .flowClose { s += " \(r.direction?.name ?? "?")" }
        s += " \(peerText(r)) \(protocolName(r.ipProtocol)) \(endpoint(r, source: true)) > \(endpoint(r, source: false))"
        if r.kind == .flowClose {
            s += " bytes \(r.detail) packets \(r.detail2)"
        } else {
            s += " len \(r.length)"
            if r.kind == .packet && r.ipProtocol == 6 { s += " [\(flagsText(r.tcpFlags))]" }
        }
        s += " \(r.verdict?.name ?? "?")"
        if r.ruleIndex != LiveRecord.noRule { s += " rule \(r.ruleIndex)" }
        s += " flow \(r.flowID)"
        if r.captureOffset != 0 { s += " cap \(r.captureFileSequence):\(r.captureOffset)" }
        return s
    }

    /// One record as a JSON object on one line (`WatchRecordJSON`, docs/json.md); `rules` is the
    /// running policy's rule table, nil when it could not be had.
    static func jsonLine(_ r: LiveRecord, rules: [RuleRef]?, encoder: JSONEncoder = JSONOutput.encoder(lines: true)) throws -> String {
        try JSONOutput.line(WatchRecordJSON(r, rules: rules), encoder: encoder)
    }
}

/// The running policy's rules by the ring's rule index, from the daemon's `policyShow` (its
/// control socket is next to the ring), with the generation they belong to. Asked when watch
/// attaches or re-attaches, every 2 s while records arrive, and at once when a record names
/// another generation. A record's rule is named only from the table of its own generation (the
/// ring carries it): one decided by a generation the daemon no longer runs gets a null rule,
/// never another generation's rule at the same index. Without an answer the last table stays
/// (nil: never had one).
struct WatchRules {
    let socketPath: String
    private(set) var rules: [RuleRef]?
    private(set) var generation: UInt64?
    private var fetchedAt: UInt64 = 0
    static let maxAgeNanoseconds: UInt64 = 2_000_000_000

    init(ringPath: String) {
        socketPath = PathText.directory(of: ringPath) + "/control.sock"
    }

    mutating func refresh(now: UInt64) {
        fetchedAt = now
        let client = ControlClient(socketPath: socketPath, timeout: .seconds(1))
        if case .policyShow(let reply)? = try? client.send(.policyShow) {
            rules = PolicyShowJSON.ruleTable(reply)
            generation = reply.policy.generation
        }
    }

    /// The rule table `r`'s `ruleIndex` belongs to: the current one when the generations match
    /// (asked again once when they do not); nil when they still differ or `r` names none.
    mutating func table(for r: LiveRecord) -> [RuleRef]? {
        guard r.policyGeneration != 0 else { return nil }
        if r.policyGeneration != generation { refresh(now: SystemClock().monotonicNanoseconds()) }
        return r.policyGeneration == generation ? rules : nil
    }

    mutating func refreshIfStale(now: UInt64) {
        if now &- fetchedAt >= WatchRules.maxAgeNanoseconds { refresh(now: now) }
    }
}
