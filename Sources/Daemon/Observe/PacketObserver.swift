// What the data path shows the outside world: the live ring (`tunnelctl watch`) and the packet
// capture (`tunnelctl capture`). docs/ring.md, docs/capture.md.
//
// The engine calls in from three places, always holding its flow lock, so the observer's state
// (the ring producer, the capture writer, the per-slot flow notes) has one writer at a time:
//
//   beginBatch()   once per data-path batch: is anyone watching? is capture on? wall clock.
//   packet(...)    once per IP packet in both directions, from `decide`: nothing at all when
//                  nobody watches and capture is off (two cached booleans); otherwise the packet
//                  is written to the capture, then a ring record (with its capture location)
//                  and, for a new flow, a flow-open record before it.
//   flowEnded(_:)  a flow left the table (expiry sweep or key reuse): a flow-close record.
//   endBatch()     after the batch: one futex wake at most, and only if a watcher sleeps.
//   tick(...)      from the timer thread (every 100 ms): applies capture settings handed over by
//                  the settings poller, flushes the capture once a second, publishes queued
//                  refusal / handshake events.
//
// Refusals and handshakes are seen outside the flow lock (WireGuard receive); they are queued
// under a small mutex of their own and published at the next batch or tick.
import Engine
import Core
import Capture
import Glibc
import LiveFeed
import Packet
import Policy
import Runtime
import Synchronization

/// Publishes the data path's packets and flow events to the live ring and the capture files.
///
/// `@unchecked Sendable`: every method except `noteRefusal`, `noteHandshake`, `requestCapture`,
/// `waitForCapture`, `captureSequenceInUse` and `firstCaptureLocation(flowID:)` must be called
/// with the engine's flow lock held (one caller at a time); those six use their own mutex or atomics.
public final class PacketObserver: @unchecked Sendable {
    /// The ring producer (nil when the ring could not be created: the daemon runs without a live feed).
    public let ring: RingProducer?
    /// The capture writer (nil when the capture directory is unusable).
    public let capture: CaptureSpooler?
    /// The capture's flow index (`capture-NNNNNN.flows`).
    let flowIndex: CaptureFlowIndex?

    /// Per flow-table slot: which flow (by id) it holds, its peer, and its first capture location.
    let notes: UnsafeMutablePointer<FlowNote>
    let noteCount: Int
    /// The peers whose names ring records carry (the engine's registry).
    public let peers: PeerRegistry
    /// Peer names by handle, rebuilt (under the flow lock) when the registry's version moves.
    private(set) var peerNames: [UInt32: LivePeerName] = [:]
    private var namesVersion: UInt64 = .max

    // Cached per batch.
    // Read per packet: no dynamic exclusivity check (only the flow-lock holder touches them).
    @usableFromInline @exclusivity(unchecked) var watching = false
    @usableFromInline @exclusivity(unchecked) var capturing = false
    var wallNanoseconds: UInt64 = 0
    var lastFlushNanoseconds: UInt64 = 0

    /// Events seen outside the flow lock, published at the next batch or tick.
    let queued = Mutex<QueuedEvents>(QueuedEvents())
    let hasQueued = Atomic<Bool>(false)
    /// Capture settings handed over by the poller or a control request.
    let pendingSettings = Mutex<CaptureSettingsChange?>(nil)
    let hasPendingSettings = Atomic<Bool>(false)
    /// Number of settings requests made (changed under `pendingSettings`' lock) and the number
    /// the timer thread has applied: `waitForCapture` compares them.
    let settingsRequested = Atomic<UInt64>(0)
    let settingsApplied = Atomic<UInt64>(0)
    /// Sequence of the capture file being written (-1: none), for pruning from another thread.
    let activeSequence = Atomic<Int64>(-1)
    /// First locations by flow id, for readers outside the data path (flow rows, control).
    let firstLocations = Mutex<[UInt64: CaptureLocation]>([:])

    /// The wall clock stamped on captured packets and ring records (the engine's clock).
    let clock: any TimeSource

    /// Records published / dropped because the ring was full (ring's own count).
    public var ringDropped: UInt64 { ring?.dropped ?? 0 }

    /// An observer for a flow table of `flowCapacity` slots. `ring` and `capture` may be nil.
    public init(ring: RingProducer?, capture: CaptureSpooler?, flowCapacity: Int, peers: PeerRegistry,
                clock: any TimeSource = SystemClock())
    {
        self.clock = clock
        self.peers = peers
        self.ring = ring
        self.capture = capture
        flowIndex = capture.map { CaptureFlowIndex(directory: $0.directory) }
        noteCount = flowCapacity
        notes = .allocate(capacity: flowCapacity)
        notes.initialize(repeating: FlowNote(), count: flowCapacity)
        firstLocations.withLock { $0.reserveCapacity(1024) }
    }

    deinit {
        notes.deallocate()
    }

    /// Re-reads the peer names (truncated to 16 bytes) when the registry changed since the last
    /// call: a version check per batch, a rebuild only after a peer was added, removed or renamed
    /// (e.g. one added over the UAPI). Flow lock held.
    @inline(__always)
    func refreshPeerNames() {
        let v = peers.version
        guard v != namesVersion else { return }
        namesVersion = v
        var names: [UInt32: LivePeerName] = [:]
        for p in peers.current.all { names[p.handle.rawValue] = LivePeerName(p.name) }
        peerNames = names
    }

    // MARK: data path (flow lock held)

    /// Starts a batch: samples whether a watcher is attached and capture is on (and says so).
    @inline(__always) @discardableResult
    public func beginBatch() -> Bool {
        watching = ring?.hasConsumer ?? false
        capturing = capture?.isEnabled ?? false
        if watching || capturing {
            refreshPeerNames()
            wallNanoseconds = UInt64(clamping: clock.wallNanoseconds())
            if hasQueued.load(ordering: .relaxed) { publishQueued() }
        }
        return watching || capturing
    }

    /// Ends a batch: wakes a sleeping watcher (at most once).
    @inline(__always)
    public func endBatch() {
        if watching { ring?.endBatch() }
    }

    /// One packet after its verdict. `packet` is the IP packet; `handle`/`entry` its flow after
    /// tracking; `opened` whether this packet opened the flow.
    @inlinable
    public func packet(_ packet: ObservedBytes, _ parsed: ParsedPacket, handle: FlowHandle, entry: FlowEntry,
                       opened: Bool, action: Verdict, peer: UInt32, fromPeer: Bool)
    {
        guard watching || capturing else { return }
        observe(packet, parsed, handle: handle, entry: entry, opened: opened, action: action, peer: peer,
                fromPeer: fromPeer)
    }

    /// A flow left the table; `peer` is its peer's handle when the caller knows it.
    @inlinable
    public func flowEnded(_ record: FlowRecord, peer: UInt32 = LiveRecord.noPeer) {
        guard watching || capturing else { return }
        ended(record, peer: peer)
    }

    // MARK: outside the flow lock

    /// A peer was refused (free-tier pause, admin refusal); published as a refusal event.
    public func noteRefusal(peer: UInt32, reason: UInt64 = 0) {
        guard ring?.hasConsumer ?? false else { return }
        enqueue(QueuedEvent(kind: .refusal, peer: peer, detail: reason))
    }

    /// A peer completed a handshake; published as a handshake event.
    public func noteHandshake(peer: UInt32) {
        guard ring?.hasConsumer ?? false else { return }
        enqueue(QueuedEvent(kind: .handshake, peer: peer, detail: 0))
    }

    /// A flow was decided knowing its host; published as a `flow-host` event (only while
    /// something watches: one record per flow with a host, never per packet).
    public func noteFlowHost(flowID: UInt64, peer: UInt32, verdict: Verdict, host: String) {
        guard ring?.hasConsumer ?? false else { return }
        enqueue(QueuedEvent(LiveRecord.flowHost(flowID: flowID, peerIndex: peer, verdict: verdict, host: host)))
    }

    /// The capture file being written now (nil: none); pruning must keep it.
    public var captureSequenceInUse: UInt32? {
        let s = activeSequence.load(ordering: .acquiring)
        return s < 0 ? nil : UInt32(s)
    }

    /// Where the first captured packet of flow `flowID` is, while the flow is live (nil when it
    /// was not captured or has ended; the flow index and the store keep it after that).
    public func firstCaptureLocation(flowID: UInt64) -> CaptureLocation? {
        firstLocations.withLock { $0[flowID] }
    }
}

/// What the observer remembers of the flow in one flow-table slot.
struct FlowNote {
    var flowID: UInt64 = 0
    var peer: UInt32 = LiveRecord.noPeer
    var captureSequence: UInt32 = 0
    /// 0: no packet of this flow captured yet.
    var captureOffset: UInt64 = 0
}

/// A capture settings change for the data path.
public struct CaptureSettingsChange: Sendable, Equatable {
    /// Capture on or off.
    public var enabled: Bool
    /// Snapshot length class.
    public var detail: CaptureDetail
    /// Public initializer.
    public init(enabled: Bool, detail: CaptureDetail) {
        self.enabled = enabled
        self.detail = detail
    }
}

/// An event seen outside the flow lock.
struct QueuedEvent {
    /// The record to publish; its time and peer name are filled in then.
    var record: LiveRecord
    init(_ record: LiveRecord) { self.record = record }
    init(kind: LiveEventKind, peer: UInt32, detail: UInt64) {
        var r = LiveRecord()
        r.kind = kind
        r.peerIndex = peer
        r.detail = detail
        record = r
    }
}

/// A bounded queue of events seen outside the flow lock (the rest are dropped and counted).
struct QueuedEvents {
    static let capacity = 64
    var events: [QueuedEvent] = []
    var dropped: UInt64 = 0
    init() { events.reserveCapacity(QueuedEvents.capacity) }
}

/// The engine calls the observer through its port (declared in Engine).
extension PacketObserver: PacketObserving {}
