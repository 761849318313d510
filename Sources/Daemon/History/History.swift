import Engine
import Core
import Config
import Glibc
import Packet
import Policy
import Runtime
import Store
import Synchronization
import WireGuard

/// The daemon's history recorder (docs/store.md): owns the `StoreWriter` and turns the
/// engine's hooks (`GatewayEvents`) and the watchdog's records (`WatchdogSink`) into store
/// records — flows opened, updated every `flowUpdateIntervalMs` (batched by a sweep of the flow
/// table on the timer thread, never per packet) and closed; coalesced flow refusals; sessions,
/// windows and automatic markers. A full writer queue drops the record and counts it
/// (`droppedRecords`, shown by `tunnelctl status`); nothing here waits on disk.
public final class History: GatewayEvents, WatchdogSink, @unchecked Sendable {
    // Safe: `clock`, `idBase`, `recordFlows`, `flowUpdateIntervalMs` are immutable; the writer and
    // the ledger are set once (at init, or when a store that failed at start opens later);
    // `peers` is the engine's registry (thread-safe); the caches are behind Mutexes; `lastSweep`/`lastSweepMono` are only touched by
    // the timer thread (timerTick) under the engine's flow lock; `offsetMs` is atomic.

    /// The writer (nil while the store cannot be opened: every record is then dropped and counted).
    public var writer: StoreWriter? { writerRef.load() }
    private let writerRef = AtomicLazyReference<StoreWriter>()
    let clock: any TimeSource
    /// Flow ids in the store are `idBase + FlowEntry.id`. The daemon passes 0 and seeds the engine's
    /// flow table above the store's highest id instead, so the id is the same everywhere (store,
    /// live ring, capture flow index).
    public let idBase: Int64
    /// False turns flow recording off (sessions, windows, refusals of the watchdog stay on).
    public let recordFlows: Bool
    /// Period of the flow-update sweep.
    public let flowUpdateIntervalMs: Int64
    /// The peers whose names flow rows carry (the engine's registry).
    public let peers: PeerRegistry
    /// The watchdog's own connection: windows and session refusals are written there at once,
    /// never through the droppable queue (nil: they go through `writer`, e.g. in benchmarks).
    public var ledger: WindowLedger? { ledgerRef.load() }
    private let ledgerRef = AtomicLazyReference<WindowLedger>()
    private let offsetMs: Atomic<Int64>
    private let lostWithoutWriter = Atomic<UInt64>(0)
    private var lastSweepMono: Int64 = .min
    private var sweptThrough: Int64 = .min

    /// A recorder writing through `writer` (flow ids above `idBase`).
    public init(writer: StoreWriter?, clock: any TimeSource, idBase: Int64, peers: PeerRegistry, ledger: WindowLedger? = nil,
                recordFlows: Bool = true, flowUpdateIntervalMs: Int64 = 5_000)
    {
        if let writer { _ = writerRef.storeIfNil(writer) }
        self.peers = peers
        if let ledger { _ = ledgerRef.storeIfNil(ledger) }
        self.clock = clock
        self.idBase = idBase
        self.recordFlows = recordFlows
        self.flowUpdateIntervalMs = flowUpdateIntervalMs
        offsetMs = Atomic(clock.wallMilliseconds() - Int64(clock.boottimeNanoseconds() / 1_000_000))
    }


    /// Connects the store once it opens after a start without one (`SessionService` retries it).
    /// Returns false when a writer was connected already.
    @discardableResult
    public func attach(writer: StoreWriter, ledger: WindowLedger) -> Bool {
        guard writerRef.storeIfNil(writer) === writer else { return false }
        _ = ledgerRef.storeIfNil(ledger)
        return true
    }

    /// Records dropped: queue full (or no store).
    public var droppedRecords: UInt64 { (writer?.droppedCount ?? 0) &+ lostWithoutWriter.load(ordering: .relaxed) }

    @inline(__always) func submit(_ r: StoreRecord) {
        if let writer = writerRef.load() { writer.submit(r) } else { lostWithoutWriter.add(1, ordering: .relaxed) }
    }

    /// Moves the daemon's heartbeat (crash recovery proves liveness up to it).
    public func heartbeat(now: Int64) { submit(.heartbeat(at: now)) }

    /// Wall-clock ms of a flow-table (monotonic) time.
    @inline(__always) func wall(_ monoMs: Int64) -> Int64 { monoMs &+ offsetMs.load(ordering: .relaxed) }

    // MARK: WatchdogSink

    public func record(_ record: WatchdogRecord) {
        switch record {
        case let .windowPut(peer, w, used, opened):
            let row = SessionWindow(peer: peer, dates: w, usedUp: used.up, usedDown: used.down)
            if let ledger = ledgerRef.load() { ledger.putWindow(row, opened: opened, at: clock.wallMilliseconds()) } else { submit(.windowPut(row)) }
        case let .windowDeleted(peer):
            if let ledger = ledgerRef.load() { ledger.deleteWindow(peer: peer, at: clock.wallMilliseconds()) } else { submit(.windowDeleted(peer: peer)) }
        case let .sessionOpened(peer, at): submit(.sessionOpened(peer: peer, at: at))
        case let .sessionClosed(peer, at, reason, rx, tx):
            submit(.sessionClosed(SessionClose(peer: peer, at: at, reason: reason, rxBytes: rx, txBytes: tx)))
        case let .restricted(peer, reason, at):
            // One coalesced row per peer and reason (window 0): attempts counted, first and last time.
            let event = RefusalEvent.session(peer: peer, windowEnd: 0, at: at, reason: reason)
            if let ledger = ledgerRef.load() { ledger.refusal(event, at: at) } else { submit(.refusal(event)) }
        case let .refused(peer, windowEnd, at, why):
            let event = RefusalEvent.session(peer: peer, windowEnd: windowEnd, at: at, reason: why.text)
            if let ledger = ledgerRef.load() { ledger.refusal(event, at: at) } else { submit(.refusal(event)) }
        case let .marker(at, label, detail): submit(.marker(MarkerInput(at: at, label: label, kind: .automatic, detail: detail)))
        }
    }

    // MARK: GatewayEvents

    /// Where a flow's first captured packet is, by flow id (set by the daemon when capture runs).
    public let captureLocation = Mutex<(@Sendable (UInt64) -> CaptureLocation?)?>(nil)

    /// Records a decision as it was taken (`FlowDecision.rule()`). A flow it opened gets its row,
    /// which keeps that opening decision for good (what the flow was allowed or refused by when
    /// it started); refused, also its refusal. A flow decided again — a reload, a `during`
    /// boundary — and now refused gets a refusal of the new decision at that moment, so
    /// `refusals`, `timeline` and `explain` show what stopped it and when; its row is not
    /// rewritten, since its opening decision is still what happened at its start.
    public func flowDecided(_ d: FlowDecision) {
        guard recordFlows else { return }
        let entry = d.entry
        let rule = d.rule()
        let name = peers.current.name(of: d.peer) ?? "peer-\(d.peer)"
        let dst = entry.responder
        guard d.opened else {
            if d.verdict.action != .allow {
                var event = RefusalEvent.flow(peer: name, decision: rule, proto: entry.key.proto.rawValue, dst: dst,
                                              dstPort: entry.responderPort, at: wall(entry.lastSeen), host: d.host)
                if d.quicUnknown { event.rule = FlowDecision.quicUnknownRule }
                submit(.refusal(event))
            }
            return
        }
        let at = wall(entry.firstSeen)
        submit(.flowOpened(FlowOpen(
            id: idBase &+ Int64(entry.id), proto: entry.key.proto.rawValue, src: entry.originator,
            srcPort: entry.originatorPort, dst: dst, dstPort: entry.responderPort, peer: name, host: d.host, at: at,
            verdict: d.verdict.action, decision: rule,
            capture: captureLocation.withLock { $0 }?(entry.id))))
        if d.verdict.action != .allow {
            var event = RefusalEvent.flow(peer: name, decision: rule, proto: entry.key.proto.rawValue, dst: dst,
                                          dstPort: entry.responderPort, at: at, host: d.host)
            if d.quicUnknown { event.rule = FlowDecision.quicUnknownRule }
            submit(.refusal(event))
        }
    }

    /// New flows refused by the peer's flow caps: one coalesced `flow` refusal row per
    /// peer and destination per hour, rule and reason `flow-limit` (the engine already coalesces
    /// to one call per peer per second; `refused` is how many it stands for). A full table of
    /// other peers' flows is counted only (`flow-table-full` in status).
    public func flowRefused(peer: UInt32, key: FlowKey, reason: FlowRefusal, refused: UInt64, monoMs: Int64) {
        guard reason == .ownerCap else { return }
        let dir = peers.current
        let name = dir.name(of: peer) ?? "peer-\(peer)"
        // The key is canonical (either order): the far end is the address that is not the peer's.
        let aIsPeer = dir.routes.lookupRaw(key.addressA) == Int32(bitPattern: peer)
        let (dst, port) = aIsPeer ? (key.addressB, key.portB) : (key.addressA, key.portA)
        submit(.refusal(.flow(peer: name, rule: "flow-limit", reason: "flow-limit: MaxFlows or NewFlowRate of the peer",
                              proto: key.proto.rawValue, dst: dst, dstPort: port, at: wall(monoMs),
                              count: Int64(clamping: max(1, refused)))))
    }

    public func flowEnded(_ record: FlowRecord) {
        guard recordFlows else { return }
        let reason: String
        switch record.reason {
        case .expired: reason = "idle"
        case .evicted: reason = "evicted"
        case .removed: reason = "removed"
        }
        submit(.flowClosed(FlowClose(id: idBase &+ Int64(record.entry.id), at: max(wall(record.entry.lastSeen), wall(record.entry.firstSeen)),
                                     counters: History.counters(record.entry), reason: reason,
                                     capture: captureLocation.withLock { $0 }?(record.entry.id))))
    }

    public func timerTick(flows: FlowTable, monoMs: Int64) {
        offsetMs.store(clock.wallMilliseconds() - monoMs, ordering: .relaxed)
        guard recordFlows else { return }
        if lastSweepMono != .min && monoMs - lastSweepMono < flowUpdateIntervalMs { return }
        let since = sweptThrough
        lastSweepMono = monoMs
        sweptThrough = monoMs
        // A flow that opened before capture started gets its first captured packet's location
        // here (the row takes it only while it has none). The sweep carries counts only: the
        // decision stored is the one `flowDecided` reported.
        let location = captureLocation.withLock { $0 }
        flows.forEach { _, e in
            guard e.lastSeen > since else { return }
            submit(.flowUpdated(FlowUpdate(
                id: idBase &+ Int64(e.id), lastSeen: wall(e.lastSeen), counters: History.counters(e), capture: location?(e.id))))
        }
    }

    public func engineStopping(flows: FlowTable, monoMs: Int64) {
        guard recordFlows else { return }
        let now = clock.wallMilliseconds()
        let location = captureLocation.withLock { $0 }
        flows.forEach { _, e in
            // Closed now; its last packet stays the last packet (`lastSeen` is not the stop time).
            submit(.flowClosed(FlowClose(id: idBase &+ Int64(e.id), at: max(now, wall(e.firstSeen)),
                                         counters: History.counters(e), reason: "shutdown", capture: location?(e.id),
                                         lastSeen: max(wall(e.lastSeen), wall(e.firstSeen)))))
        }
    }

    static func counters(_ e: FlowEntry) -> FlowCounters {
        FlowCounters(bytesOut: e.bytesOriginal, bytesIn: e.bytesReply, packetsOut: e.packetsOriginal, packetsIn: e.packetsReply)
    }
}

extension IPAddress {
    /// The store's form of a packet address (same 128-bit layout).
    init(_ a: IPAddress) { self.init(high: a.high, low: a.low, isIPv6: a.isIPv6) }
}

