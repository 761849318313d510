import Core
import Packet
import Policy
import SystemIO

/// What a UDP/443 flow whose host cannot be learned gets when its verdict depends on the host
/// (`QUIC =` in tunneld.conf).
public enum QUICHostMode: String, Sendable, CaseIterable {
    /// Read the QUIC Initial; a flow whose name cannot be read is decided without a host.
    case inspect
    /// Read the QUIC Initial; a flow whose name cannot be read is blocked, so browsers fall
    /// back to TLS over TCP, where the name can be read.
    case blockUnknown = "block-unknown"
}

/// Host learning in the data path (docs/hosts.md): the DNS answers the gateway
/// forwards to peers, and the *pending* flows — flows a peer opened whose verdict could still
/// change with their host name — whose first payload is held until the name is read from it
/// (TLS SNI, HTTP Host, QUIC Initial SNI), the payload shows it names none, or
/// `pendingTimeoutMs` passes.
///
/// Everything is allocated once, on first use (`prepare`): a record per pending flow (at most
/// `pendingFlows`), each with a `FirstFlightBuffer` (16 KiB) and room for
/// `heldPacketsPerFlow` held packets; per flow-table slot, whether its host phase is over and
/// the name it is known by (a String, made once per flow that has one). A packet allocates
/// nothing here.
///
/// Not thread-safe: every call is made with the engine's flow lock held.
final class HostGate: @unchecked Sendable {
    // Safe: used only inside GatewayEngine.withFlows (the flow lock).

    /// One pending flow.
    struct Record {
        var handle: FlowHandle
        var id: UInt64 = 0
        var since: Int64 = 0
        var peer: UInt32 = 0
        var held = 0
        var isn: UInt32 = 0
        var hasISN = false
        var started = false
        var quic = false
        var opened = false
        var query: PolicyQuery
    }

    let options: GatewayOptions
    let counters: GatewayCounters
    /// The slots of the flow table (per-slot state is indexed by `FlowHandle.index`).
    let flowCapacity: Int
    /// Bytes one held packet may take (the TUN MTU: what a peer's decrypted packet can be).
    let heldSlotBytes: Int

    private(set) var ready = false
    private(set) var cache: AddressNameCache!
    private let dns = DNSAnswers()
    private var quicReader: QUICInitialReader?
    /// DNS over TCP answers that span segments (prepared with the rest).
    private var dnsStreams: DNSStreamAssembler?
    private var pool: FirstFlightPool!
    private var scratch = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var records: [Record] = []
    private var freeRecords: [Int32] = []
    private var heldBytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var heldLengths: UnsafeMutablePointer<Int>?
    /// Per flow slot: the flow id the state belongs to (0: none).
    private var slotID: UnsafeMutablePointer<UInt64>?
    /// Per flow slot: the record of a pending flow, or -1.
    private var slotRecord: UnsafeMutablePointer<Int32>?
    /// Per flow slot: true once the flow's host phase is over (decided, never pending again).
    private var slotDone: UnsafeMutablePointer<Bool>?
    /// Per flow slot: the name the flow is known by, and where it came from.
    private var slotHost: [String?] = []
    private var slotSource: [HostSource?] = []
    /// Records whose held packets wait to be written to the TUN device (oldest first), and
    /// the next of their packets to write.
    private var releaseQueue: [Int32] = []
    private var releaseNext = 0
    private var releaseHead = 0
    /// True when `releaseQueue` holds packets to write.
    var hasReleased: Bool { releaseHead < releaseQueue.count }
    /// A reply just decided its pending TCP flow `reject` (`pendingPacket`): the thread handling
    /// that reply answers its sender and also resets the peer that opened the flow
    /// (`takeRejectOpener`). Flow lock held.
    var rejectOpener = false
    /// Whether the reply being handled must also reset the flow's opener (and clears it).
    func takeRejectOpener() -> Bool {
        defer { rejectOpener = false }
        return rejectOpener
    }

    init(options: GatewayOptions, counters: GatewayCounters, flowCapacity: Int, mtu: Int) {
        self.options = options
        self.counters = counters
        self.flowCapacity = flowCapacity
        heldSlotBytes = max(mtu, 1280)
    }

    deinit {
        guard ready else { return }
        scratch.deallocate()
        heldBytes.deallocate()
        heldLengths?.deallocate()
        slotID?.deallocate()
        slotRecord?.deallocate()
        slotDone?.deallocate()
    }

    /// Allocates everything, once (the first time a policy with host rules meets a flow).
    func prepare() {
        guard !ready else { return }
        let p = max(1, options.hostPendingFlows)
        let k = max(1, options.hostHeldPacketsPerFlow)
        var random = SystemRandomNumberGenerator()
        cache = AddressNameCache(capacity: max(1, options.dnsCacheAddresses), ttlFloor: options.dnsTTLFloor,
                                 ttlCeiling: max(options.dnsTTLFloor, options.dnsTTLCeiling), hashSeed: random.next())
        pool = FirstFlightPool(count: p)
        quicReader = QUICInitialReader()
        dnsStreams = DNSStreamAssembler()
        scratch = .allocate(byteCount: 16384, alignment: 16)
        let placeholder = PolicyQuery(direction: .out, proto: .tcp, source: IPAddress(v4: 0), destination: IPAddress(v4: 0),
                                      sourcePort: 0, destinationPort: 0, peer: .unknown, tier: nil, host: nil, minuteOfWeek: 0)
        records = (0..<p).map { i in Record(handle: FlowHandle(slot: 0), query: placeholder) }
        freeRecords = (0..<Int32(p)).reversed()
        freeRecords.reserveCapacity(p)
        releaseQueue.reserveCapacity(p + 1)
        heldBytes = .allocate(byteCount: p * k * heldSlotBytes, alignment: 16)
        heldLengths = .allocate(capacity: p * k)
        heldLengths!.initialize(repeating: 0, count: p * k)
        slotID = .allocate(capacity: flowCapacity)
        slotID!.initialize(repeating: 0, count: flowCapacity)
        slotRecord = .allocate(capacity: flowCapacity)
        slotRecord!.initialize(repeating: -1, count: flowCapacity)
        slotDone = .allocate(capacity: flowCapacity)
        slotDone!.initialize(repeating: false, count: flowCapacity)
        slotHost = Array(repeating: nil, count: flowCapacity)
        slotSource = Array(repeating: nil, count: flowCapacity)
        ready = true
    }

    // MARK: DNS

    /// Learns the addresses in a DNS response the gateway forwards to `peer` (UDP or TCP from
    /// port 53). Call only for such packets.
    func learnDNS(_ p: ParsedPacket, _ packet: UnsafeRawBufferPointer, peer: UInt32, nowMs: Int64) {
        prepare()
        if p.proto == .tcp {
            learnDNSOverTCP(p, packet, peer: peer, nowMs: nowMs)
            return
        }
        switch dns.parse(response: p, in: packet) {
        case .answered?:
            cache.learn(peer: peer, from: dns, now: nowMs)
            counters.host(.dnsAnswers)
        case .failed?:
            counters.host(.dnsMalformed)
        case nil:
            break
        }
    }

    /// A segment of a DNS-over-TCP answer: its messages, once whole (`DNSStreamAssembler`), are
    /// read like UDP answers; one that cannot be assembled (a gap, longer than 16 KiB, pushed
    /// out by other connections) counts as `dns-malformed`.
    private func learnDNSOverTCP(_ p: ParsedPacket, _ packet: UnsafeRawBufferPointer, peer: UInt32, nowMs: Int64) {
        guard p.hasTransportHeader, p.sourcePort == 53, p.payloadOffset <= p.totalLength, p.totalLength <= packet.count,
              let streams = dnsStreams else { return }
        let closing = p.tcpFlags.contains(.fin) || p.tcpFlags.contains(.rst)
        let payload = UnsafeRawBufferPointer(rebasing: packet[p.payloadOffset..<p.totalLength])
        if payload.isEmpty && !closing { return }  // a bare ACK
        let key = DNSStreamAssembler.Key(peer: peer, server: p.source, serverPort: p.sourcePort, client: p.destination,
                                         clientPort: p.destinationPort)
        let problem = streams.feed(key, sequence: p.tcpSequence, payload: payload, closing: closing) { m in
            switch dns.parse(m) {
            case .answered:
                cache.learn(peer: peer, from: dns, now: nowMs)
                counters.host(.dnsAnswers)
            case .failed:
                counters.host(.dnsMalformed)
            }
        }
        if problem != nil { counters.host(.dnsMalformed) }
    }

    /// The names `peer` looked up for `address` (empty when nothing was learned).
    func dnsNames(peer: UInt32, address: IPAddress, nowMs: Int64) -> AddressNames {
        guard ready else { return .none }
        return cache.names(peer: peer, address: address, now: nowMs)
    }

    /// Forgets what `peer` looked up (a removed peer).
    func forget(peer: UInt32) {
        guard ready else { return }
        cache.forget(peer: peer)
        dnsStreams?.forget(peer: peer)
    }

    // MARK: Per-flow state

    /// Makes slot `index` belong to flow `id`: the state of an earlier flow in that slot (one
    /// that ended) is dropped, its held packets with it.
    @inline(__always) func claim(_ index: Int32, id: UInt64) {
        let i = Int(index)
        if slotID![i] == id { return }
        let r = slotRecord![i]
        if r >= 0 { discard(r) }
        slotID![i] = id
        slotRecord![i] = -1
        slotDone![i] = false
        slotHost[i] = nil
        slotSource[i] = nil
    }

    /// The flow's name (SNI/Host/QUIC, or the DNS name shown for it) and its source.
    func host(_ index: Int32) -> (String, HostSource)? {
        guard ready, let h = slotHost[Int(index)], let s = slotSource[Int(index)] else { return nil }
        return (h, s)
    }

    /// The flow in slot `index` is pending.
    func isPending(_ index: Int32) -> Bool { ready && slotRecord![Int(index)] >= 0 }

    /// The flow's host phase is over.
    func isDone(_ index: Int32) -> Bool { ready && slotDone![Int(index)] }

    /// Ends the host phase of the flow in `index` (no pending record).
    func markDone(_ index: Int32, host: String?, source: HostSource?) {
        let i = Int(index)
        slotDone![i] = true
        if let host { slotHost[i] = host; slotSource[i] = source }
    }

    /// Starts holding flow `handle` (opened by `peer`, decided by `query` once its host is
    /// known). False when every record is taken (counted): decide it without a host.
    func begin(_ handle: FlowHandle, id: UInt64, peer: UInt32, query: PolicyQuery, quic: Bool, opened: Bool,
               nowMs: Int64) -> Bool
    {
        guard let r = freeRecords.popLast() else {
            counters.host(.pendingOverflow)
            return false
        }
        records[Int(r)].handle = handle
        records[Int(r)].id = id
        records[Int(r)].since = nowMs
        records[Int(r)].peer = peer
        records[Int(r)].held = 0
        records[Int(r)].hasISN = false
        records[Int(r)].started = false
        records[Int(r)].quic = quic
        records[Int(r)].opened = opened
        records[Int(r)].query = query
        slotRecord![Int(handle.index)] = r
        counters.host(.pending)
        return true
    }

    /// What a payload taught about a pending flow.
    enum Step {
        /// The name is known (and where it came from).
        case found(String, HostSource)
        /// The flow names no host (or not one we can read): decide it without.
        case none
        /// The payload cannot be read for a name and the flow is blocked for it (QUIC
        /// `block-unknown`).
        case blockUnknown
        /// Not yet: the packet is held.
        case held
        /// Not yet, and the packet could not be held (counted): decide it without a host.
        case overflow
    }

    /// A packet of pending flow `index` from its originator: a SYN notes the stream start;
    /// payload is reassembled and read. `packet` is the whole IP packet (held verbatim).
    func step(_ index: Int32, _ p: ParsedPacket, _ packet: UnsafeRawBufferPointer) -> Step? {
        let r = Int(slotRecord![Int(index)])
        let payloadCount = p.payloadLength
        if p.proto == .tcp && p.tcpFlags.contains(.syn) {
            records[r].isn = p.tcpSequence &+ 1
            records[r].hasISN = true
        }
        if payloadCount <= 0 || p.payloadOffset >= packet.count { return nil }  // handshake packets pass
        let payload = UnsafeRawBufferPointer(rebasing: packet[p.payloadOffset..<min(packet.count, p.payloadOffset + payloadCount)])
        let buffer = pool[Int32(r)]
        if !records[r].started {
            buffer.reset(initialSequence: records[r].hasISN ? records[r].isn : p.tcpSequence)
            records[r].started = true
        }
        let result: Step
        if records[r].quic {
            guard let reader = quicReader else { return Step.none }
            switch reader.read(datagram: payload, into: buffer) {
            case .clientHello(let e):
                switch e {
                case .found:
                    result = .found(e.lowercasedHost(in: buffer.contiguous) ?? "", .quicSNI)
                case .needMoreData:
                    result = .held
                case .notPresent, .malformed:
                    counters.host(.unreadable)
                    result = unknownQUIC()
                }
            case .notInitial, .unsupportedVersion, .failed:
                counters.host(.unreadable)
                result = unknownQUIC()
            }
        } else {
            _ = buffer.insert(sequence: p.tcpSequence, payload)
            let found = FirstFlightHost.find(in: buffer.contiguous, scratch: scratch)
            switch found.extraction {
            case .found:
                result = .found(found.lowercasedHost ?? "", found.source ?? .tlsSNI)
            case .needMoreData where !buffer.isFull:
                result = .held
            case .needMoreData, .malformed:
                counters.host(.unreadable)
                result = .none
            case .notPresent:
                // Nothing contiguous yet (a segment out of order) is not "no host".
                result = buffer.contiguousCount == 0 && !buffer.isFull ? .held : .none
            }
        }
        guard case .held = result else { return result }
        let k = max(1, options.hostHeldPacketsPerFlow)
        guard records[r].held < k, packet.count <= heldSlotBytes else {
            counters.host(.heldOverflow)
            return .overflow
        }
        let slot = r * k + records[r].held
        (heldBytes.baseAddress! + slot * heldSlotBytes).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        heldLengths![slot] = packet.count
        records[r].held += 1
        counters.host(.heldPackets)
        return .held
    }

    private func unknownQUIC() -> Step {
        options.quic == .blockUnknown ? .blockUnknown : .none
    }

    /// Replaces the query pending flow `index` will be decided by (a new policy generation).
    func updateQuery(_ index: Int32, _ q: PolicyQuery) {
        let r = Int(slotRecord![Int(index)])
        records[r].query = q
    }

    /// The record of pending flow `index`.
    func record(_ index: Int32) -> Record { records[Int(slotRecord![Int(index)])] }

    /// Ends pending flow `index` with `verdict`: allowed, its held packets are queued for the
    /// TUN device (`drain`); otherwise they are dropped (counted as `verdict`'s drop). Returns
    /// the last held packet's bytes, valid until the next call here (to answer a `reject`).
    @discardableResult
    func finish(_ index: Int32, verdict: Verdict) -> UnsafeRawBufferPointer? {
        let r = slotRecord![Int(index)]
        guard r >= 0 else { return nil }
        slotRecord![Int(index)] = -1
        slotDone![Int(index)] = true
        return settle(r, verdict: verdict)
    }

    private func settle(_ r: Int32, verdict: Verdict) -> UnsafeRawBufferPointer? {
        let held = records[Int(r)].held
        if verdict == .allow && held > 0 {
            releaseQueue.append(r)
            return nil
        }
        var last: UnsafeRawBufferPointer?
        if held > 0 {
            let k = max(1, options.hostHeldPacketsPerFlow)
            let slot = Int(r) * k + held - 1
            last = UnsafeRawBufferPointer(start: heldBytes.baseAddress! + slot * heldSlotBytes, count: heldLengths![slot])
            counters.drop(verdict == .reject ? .policyReject : .policyBlock, UInt64(held))
        }
        records[Int(r)].held = 0
        freeRecords.append(r)
        return last
    }

    /// Drops record `r` (its flow ended while pending).
    private func discard(_ r: Int32) {
        let held = records[Int(r)].held
        if held > 0 { counters.host(.discarded, UInt64(held)) }
        records[Int(r)].held = 0
        records[Int(r)].id = 0
        freeRecords.append(r)
    }

    /// Copies queued released packets into the free slots of `batch` (slot offset 0), oldest
    /// first, as many as fit; the rest wait for the next call. Each packet is offered to `admit`
    /// first (with the peer that sent it) when there is room for it: the caller meters and shapes
    /// it there like any other allowed packet, and it is copied only when `admit` says it goes now
    /// (false: the caller queued it elsewhere or dropped and counted it).
    func drain(into batch: PacketBatch, admit: (UInt32, UnsafeRawBufferPointer) -> Bool) {
        let k = max(1, options.hostHeldPacketsPerFlow)
        while releaseHead < releaseQueue.count {
            let r = Int(releaseQueue[releaseHead])
            while releaseNext < records[r].held {
                let t = batch.count
                guard t < batch.capacity else { return }
                let slot = r * k + releaseNext
                let n = heldLengths![slot]
                releaseNext += 1
                guard n <= batch.slot(t).count else { continue }
                let packet = UnsafeRawBufferPointer(start: heldBytes.baseAddress! + slot * heldSlotBytes, count: n)
                guard admit(records[r].peer, packet) else { continue }
                batch.slot(t).baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: n)
                batch.offsets[t] = 0
                batch.lengths[t] = n
                batch.count = t + 1
            }
            records[r].held = 0
            freeRecords.append(Int32(r))
            releaseNext = 0
            releaseHead += 1
        }
        releaseQueue.removeAll(keepingCapacity: true)
        releaseHead = 0
    }

    /// The pending flows waiting since before `deadline` (ms): calls `body` with each one's flow
    /// handle and record; `body` decides them (calling `finish`) or they are dropped when their
    /// flow is gone (`alive` false).
    func expire(before deadline: Int64, alive: (FlowHandle, UInt64) -> Bool, _ body: (Record) -> Void) {
        guard ready else { return }
        for r in records.indices where records[r].id != 0 && freeRecordsDoesNotContain(r) && records[r].since <= deadline {
            let rec = records[r]
            let index = Int(rec.handle.index)
            guard slotRecord![index] == Int32(r) else { continue }  // already released (queued)
            if !alive(rec.handle, rec.id) {
                slotRecord![index] = -1
                discard(Int32(r))
                continue
            }
            counters.host(.timeouts)
            body(rec)
        }
    }

    /// True when record `r` is in use: the slot it names points back at it.
    @inline(__always) private func freeRecordsDoesNotContain(_ r: Int) -> Bool {
        let index = Int(records[r].handle.index)
        return index < flowCapacity && slotRecord![index] == Int32(r) && slotID![index] == records[r].id
    }
}
