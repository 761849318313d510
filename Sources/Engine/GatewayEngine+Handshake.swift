// The handshake thread: queued handshake messages → admission → responses, cookie replies and
// the flush of packets that waited (the handshake trip in docs/ARCHITECTURE.md).
import SystemIO
import Core
import Glibc
import Packet
import Policy
import Runtime
import WireGuard

extension GatewayEngine {
    // MARK: handshake: the queue → responses, cookie replies, completed handshakes

    /// The handshake thread: every initiation, response and cookie reply the inbound thread
    /// queued. Only screened messages (right length, valid mac1) count toward "under load".
    ///
    /// An initiation goes one way: the device authenticates it and returns it unanswered
    /// (`.initiation`); admission decides from memory (`admitInitiation`: admit, refuse, or later
    /// while a shared-store window opens elsewhere); the engine applies the peer actions that came
    /// with the decision and has the device answer (`respond`) or drops it. Initiations answered
    /// `.later` wait in `parked` (one per peer, the newest) and are asked again every few
    /// milliseconds for up to `parkedInitiationMs`.
    func handshakeLoop() {
        let batchSize = options.batchSize
        let rx = PacketBatch(capacity: batchSize, slotSize: HandshakeQueue.slotBytes)
        let toNet = PacketBatch(capacity: batchSize * 2, slotSize: datagramSlotSize)
        let netValid = UnsafeMutablePointer<Bool>.allocate(capacity: toNet.capacity)
        // Peers whose handshake completed: their queued packets go out now (or a keepalive).
        var flushes: [(peer: PeerHandle, keepalive: Bool)] = []
        flushes.reserveCapacity(batchSize)
        var parked = ParkedInitiations()
        defer { netValid.deallocate() }

        while running.load(ordering: .relaxed) {
            beatHandshake.add(1, ordering: .relaxed)
            let n = handshakes.pop(into: rx, timeoutMilliseconds: parked.isEmpty ? 250 : 5)
            toNet.count = 0
            flushes.removeAll(keepingCapacity: true)
            var now = clock.boottimeNanoseconds()
            for i in 0..<n {
                now = clock.boottimeNanoseconds()
                let source = rx.endpoints[i]
                let datagram = UnsafeRawBufferPointer(rx.packet(i))
                let underLoad = device.countsTowardLoad(datagram) ? noteHandshake(now: now) : false
                let k = toNet.count
                var result = device.receive(
                    rx.packet(i), length: datagram.count, from: source, now: now, underLoad: underLoad,
                    output: toNet.slot(k), deferInitiations: true)
                var refusal: RefusalCode?
                if case .initiation(let token) = result {
                    parked.remove(token.peerHandle)  // a newer initiation replaces a parked one
                    switch answer(token, now: now, output: toNet.slot(k)) {
                    case .answered(let r): result = r
                    case .refused(let code): (result, refusal) = (.refused(peer: token.peerHandle), code)
                    case .later:
                        parked.park(token, now: now)
                        continue
                    }
                }
                finishHandshake(result, source: source, refusal: refusal, toNet: toNet, slot: k, valid: netValid, flushes: &flushes)
            }
            if !parked.isEmpty {
                now = clock.boottimeNanoseconds()
                parked.retry(now: now, giveUpAfter: UInt64(options.parkedInitiationMs) * 1_000_000) { token in
                    guard toNet.count < toNet.capacity else { return false }
                    let k = toNet.count
                    switch answer(token, now: now, output: toNet.slot(k)) {
                    case .later: return false
                    case .answered(let r):
                        finishHandshake(r, source: token.source, refusal: nil, toNet: toNet, slot: k, valid: netValid, flushes: &flushes)
                    case .refused(let code):
                        finishHandshake(.refused(peer: token.peerHandle), source: token.source, refusal: code, toNet: toNet,
                                        slot: k, valid: netValid, flushes: &flushes)
                    }
                    return true
                }
            }
            if toNet.count == 0 && flushes.isEmpty { continue }
            flushPending(flushes, into: toNet, valid: netValid, now: now)
            sendRuns(toNet, valid: netValid)
        }
    }

    /// One handshake message's outcome, after admission: a response or cookie reply into
    /// `toNet` slot `k`, a completed handshake's flush, or a counted and recorded refusal
    /// (`refusal`: admission's code; nil: ask it).
    func finishHandshake(_ result: ReceiveResult, source: Endpoint, refusal: RefusalCode?, toNet: PacketBatch, slot k: Int,
                         valid netValid: UnsafeMutablePointer<Bool>, flushes: inout [(peer: PeerHandle, keepalive: Bool)])
    {
        switch result {
        case .sendResponse(let peer, let range):
            // Admitted; the watchdog may still refuse it if the window ended in between (the
            // actions drop the keys): then nothing goes back.
            if case .refuse(let code) = completed(peer) {
                counters.drop(.peerRefused)
                noteRefusal(peer, code: code)
                return
            }
            observer?.noteHandshake(peer: peer.rawValue)
            counters.handshakes.add(1, ordering: .relaxed)
            toNet.offsets[k] = range.lowerBound
            toNet.lengths[k] = range.count
            toNet.endpoints[k] = source
            netValid[k] = true
            toNet.count = k + 1
        case .sendCookieReply(let range):
            counters.cookieReplies.add(1, ordering: .relaxed)
            toNet.offsets[k] = range.lowerBound
            toNet.lengths[k] = range.count
            toNet.endpoints[k] = source
            netValid[k] = true
            toNet.count = k + 1
        case .handshakeComplete(let peer):
            if case .refuse = completed(peer) { return }  // our own initiation's answer, refused after all
            flushes.append((peer, true))
            observer?.noteHandshake(peer: peer.rawValue)
            counters.handshakes.add(1, ordering: .relaxed)
        case .refused(let peer):
            counters.drop(.peerRefused)
            admission?.handshakeRefused(peer: peer)
            noteRefusal(peer, code: refusal)
        case .initiation, .data, .keepalive, .cookieStored, .drop:
            break
        }
    }

    /// Encrypts the packets that waited for each peer's handshake into the free slots of `toNet`
    /// (a keepalive when none waited and `keepalive` is set).
    func flushPending(_ flushes: [(peer: PeerHandle, keepalive: Bool)], into toNet: PacketBatch,
                      valid netValid: UnsafeMutablePointer<Bool>, now: UInt64)
    {
        for f in flushes {
            var sent = false
            while toNet.count < toNet.capacity {
                let k = toNet.count
                let room = UnsafeMutableRawBufferPointer(rebasing: toNet.slot(k)[16...])
                guard let len = pending.withLock({ $0[f.peer.rawValue]?.pop(into: room) }) else { break }
                toNet.count = k + 1
                seal(peer: f.peer, batch: toNet, slot: k, length: len, now: now, valid: netValid)
                sent = true
            }
            if !sent && f.keepalive && toNet.count < toNet.capacity {
                let k = toNet.count
                toNet.count = k + 1
                seal(peer: f.peer, batch: toNet, slot: k, length: 0, now: now, valid: netValid)
            }
        }
    }
}
