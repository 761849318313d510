// The three loops of the data path; see the narrative at the top of GatewayEngine.swift.
import SystemIO
import Core
import Glibc
import Packet
import Policy
import Runtime
import WireGuard

extension GatewayEngine {
    /// Bytes a slot needs for a transport message carrying an MTU-sized packet: header, padding, tag.
    var datagramSlotSize: Int { max(2048, (tun.mtu + 16 + 16 + 16 + 63) & ~63) }

    // MARK: inbound: UDP → TUN

    func inboundLoop() {
        let batchSize = options.batchSize
        let rx = PacketBatch(capacity: batchSize, slotSize: datagramSlotSize)
        // Room for a batch and for packets released by flows that stopped waiting for their host.
        let toTun = PacketBatch(capacity: batchSize * 2, slotSize: datagramSlotSize)
        let toNet = PacketBatch(capacity: batchSize * 2, slotSize: datagramSlotSize)
        let netValid = UnsafeMutablePointer<Bool>.allocate(capacity: toNet.capacity)
        let dataPeer = UnsafeMutablePointer<UInt32>.allocate(capacity: batchSize)
        // Replies built under the flow lock, encrypted after it: (peer, slot in toNet, length).
        var rejects: [(peer: PeerHandle, slot: Int, length: Int)] = []
        rejects.reserveCapacity(batchSize)
        // Peers whose queued packets can go out now (and whether to send a keepalive if none).
        var flushes: [(peer: PeerHandle, keepalive: Bool)] = []
        flushes.reserveCapacity(batchSize)
        var minutes = MinuteClock()
        var metering = QuotaRun(up: true)
        defer {
            netValid.deallocate()
            dataPeer.deallocate()
        }

        var full = false  // the last receive filled the batch: more is waiting, skip the poll
        while running.load(ordering: .relaxed) {
            beatInbound.add(1, ordering: .relaxed)
            let n: Int
            do {
                if !full {
                    switch try bind.waitReadable(timeoutMilliseconds: shapedPollTimeout(limits.up)) {
                    case .closed: return
                    case .timedOut:
                        releaseHeld(into: toTun, metering: &metering)
                        writeShapedUp(toTun)
                        continue
                    case .readable: break
                    }
                }
                n = try bind.receive(into: rx)
                full = n == rx.capacity
            } catch {
                log.error("inbound: \(error); retrying in 100 ms")
                Sys.sleep(milliseconds: 100)
                continue
            }
            if n == 0 { continue }
            let now = clock.boottimeNanoseconds()
            toNet.count = 0
            rejects.removeAll(keepingCapacity: true)
            flushes.removeAll(keepingCapacity: true)

            // 1. WireGuard: handshake messages to the handshake thread; transport decrypted in place.
            for i in 0..<n {
                dataPeer[i] = 0
                let length = rx.lengths[i]
                let slot = rx.slot(i)
                let datagram = UnsafeRawBufferPointer(rebasing: slot[0..<length])
                if HandshakeScreen.messageType(datagram) != nil {
                    if !handshakes.push(datagram, from: rx.endpoints[i]) { counters.drop(.handshakeBacklogFull) }
                    continue
                }
                // Transport data, or junk the device drops and counts (no handshake of the right
                // length reaches it here, so nothing is answered from this thread).
                let result = device.receive(
                    slot, length: length, from: rx.endpoints[i], now: now, underLoad: false,
                    output: toNet.slot(toNet.count))
                switch result {
                case .data(let peer, let range, let confirmed):
                    rx.offsets[i] = range.lowerBound
                    rx.lengths[i] = range.count
                    dataPeer[i] = peer.rawValue
                    if confirmed { flushes.append((peer, false)) }
                case .keepalive(let peer, let confirmed):
                    if confirmed { flushes.append((peer, false)) }
                case .sendResponse, .sendCookieReply, .handshakeComplete, .refused, .initiation, .cookieStored, .drop:
                    break
                }
            }

            // 2. Policy, once per batch under the flow lock.
            let policy = self.policy
            let directory = registry.current
            let trie = directory.routes
            let metered = quotas.current
            syncShaper(limits.up, up: true, directory, now: now)
            let nowMs = Int64(now / 1_000_000)
            let minute = minutes.minuteOfWeek(epochMs: clock.wallMilliseconds())
            toTun.count = 0
            withFlows { table in
                syncFlowCaps(directory, now: now)
                // The observer only when something watches this batch (live ring or capture):
                // otherwise no per-packet call at all.
                let watcher = observer.flatMap { $0.beginBatch() ? $0 : nil }
                for i in 0..<n where dataPeer[i] != 0 {
                    let packet = UnsafeRawBufferPointer(rx.packet(i))
                    let peer = dataPeer[i]
                    guard var parsed = try? PacketParser.parse(packet) else {
                        counters.drop(.malformedInner)
                        continue
                    }
                    guard resolveFragment(&parsed, nowMs: nowMs) else {
                        counters.drop(.unattributableFragment)
                        continue
                    }
                    // Cryptokey routing (whitepaper §2): the inner source must be one of the peer's.
                    guard trie.lookupRaw(parsed.source) == Int32(bitPattern: peer) else {
                        counters.drop(.spoofedSource)
                        continue
                    }
                    switch decide(table, parsed, packet, peer: peer, fromPeer: true, policy: policy, watcher: watcher,
                                  minute: minute, nowMs: nowMs)
                    {
                    case .allow:
                        // Packets a flow held while it waited for its host go first (this packet
                        // may be the one that decided it), metered and shaped before it.
                        drainHeld(into: toTun, metered: metered, metering: &metering, now: now)
                        // A peer whose window quota is used up: nothing more goes through.
                        if !metered.isEmpty, !metering.admit(peer: peer, bytes: packet.count, in: metered, meter: quotas) {
                            counters.drop(.quotaUsed)
                            continue
                        }
                        // A shaped peer's packet over its RateUp waits (or overflows, counted).
                        if limits.up.isShaped(peer),
                            !shapeAllows(limits.up, peer, packet, now: now, drop: .rateOverflowUp) { continue }
                        let t = toTun.count
                        guard t < toTun.capacity else {
                            counters.drop(.tunBusy)
                            continue
                        }
                        toTun.slot(t).baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: packet.count)
                        toTun.offsets[t] = 0
                        toTun.lengths[t] = packet.count
                        toTun.count = t + 1
                    case .pending:
                        break  // held until the flow's host is known (HostGate)
                    case .block:
                        counters.drop(.policyBlock)
                    case .reject:
                        counters.drop(.policyReject)
                        let k = toNet.count
                        guard k < toNet.capacity else { continue }
                        let room = UnsafeMutableRawBufferPointer(
                            rebasing: toNet.slot(k)[16..<(16 + min(tun.mtu, datagramSlotSize - 48))])
                        if let len = buildRejection(answering: packet, parsed, into: room) {
                            rejects.append((PeerHandle(rawValue: peer), k, len))
                            netValid[k] = false
                            toNet.count = k + 1
                        }
                    }
                }
                drainHeld(into: toTun, metered: metered, metering: &metering, now: now)
                observer?.endBatch()
            }
            if !metered.isEmpty { metering.flush(quotas) }

            // 3. Deliver to the kernel (with the shaped packets due now).
            releaseShapedUp(into: toTun, now: now)
            if toTun.count > 0 { writeAll(toTun) }

            // 4. Encrypt rejections, flush packets that waited for a handshake, send.
            for r in rejects {
                seal(peer: r.peer, batch: toNet, slot: r.slot, length: r.length, now: now, valid: netValid)
            }
            flushPending(flushes, into: toNet, valid: netValid, now: now)
            sendRuns(toNet, valid: netValid)
        }
    }

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

    // MARK: outbound: TUN → UDP

    func outboundLoop() {
        let batchSize = options.batchSize
        let rd = PacketBatch(capacity: batchSize, slotSize: datagramSlotSize, headroom: 16)
        let valid = UnsafeMutablePointer<Bool>.allocate(capacity: batchSize)
        let sendPeer = UnsafeMutablePointer<UInt32>.allocate(capacity: batchSize)
        let toTun = PacketBatch(capacity: batchSize * 2, slotSize: datagramSlotSize)
        let control = PacketBatch(capacity: 8, slotSize: 256)
        let controlValid = UnsafeMutablePointer<Bool>.allocate(capacity: 8)
        // Packets released by the down-direction shaper, encrypted in place like `rd`.
        let shaped = PacketBatch(capacity: batchSize, slotSize: datagramSlotSize, headroom: 16)
        let shapedPeer = UnsafeMutablePointer<UInt32>.allocate(capacity: batchSize)
        let shapedValid = UnsafeMutablePointer<Bool>.allocate(capacity: batchSize)
        var minutes = MinuteClock()
        var metering = QuotaRun(up: false)
        defer {
            valid.deallocate()
            sendPeer.deallocate()
            controlValid.deallocate()
            shapedPeer.deallocate()
            shapedValid.deallocate()
        }

        var full = false  // the last read filled the batch: more is waiting, skip the poll
        while running.load(ordering: .relaxed) {
            beatOutbound.add(1, ordering: .relaxed)
            let n: Int
            do {
                if !full {
                    switch try tun.waitReadable(timeoutMilliseconds: shapedPollTimeout(limits.down)) {
                    case .closed: return
                    case .timedOut:
                        sendShapedDown(shaped, peers: shapedPeer, valid: shapedValid, control: control,
                                       controlValid: controlValid)
                        continue
                    case .readable: break
                    }
                }
                n = try tun.readPackets(into: rd)
                full = n == rd.capacity
            } catch {
                log.error("outbound: \(error); retrying in 100 ms")
                Sys.sleep(milliseconds: 100)
                continue
            }
            if n == 0 { continue }
            let now = clock.boottimeNanoseconds()
            let nowMs = Int64(now / 1_000_000)
            let policy = self.policy
            let directory = registry.current
            let trie = directory.routes
            let metered = quotas.current
            syncShaper(limits.down, up: false, directory, now: now)
            let minute = minutes.minuteOfWeek(epochMs: clock.wallMilliseconds())
            toTun.count = 0

            // 1. Route and decide under the flow lock.
            withFlows { table in
                syncFlowCaps(directory, now: now)
                // The observer only when something watches this batch (live ring or capture):
                // otherwise no per-packet call at all.
                let watcher = observer.flatMap { $0.beginBatch() ? $0 : nil }
                for i in 0..<n {
                    sendPeer[i] = 0
                    valid[i] = false
                    let packet = UnsafeRawBufferPointer(rd.packet(i))
                    guard var parsed = try? PacketParser.parse(packet) else {
                        counters.drop(.malformedOutbound)
                        continue
                    }
                    guard resolveFragment(&parsed, nowMs: nowMs) else {
                        counters.drop(.unattributableFragment)
                        continue
                    }
                    let peer = trie.lookupRaw(parsed.destination)
                    guard peer > 0 else {
                        counters.drop(.noRoute)
                        continue
                    }
                    switch decide(table, parsed, packet, peer: UInt32(peer), fromPeer: false,
                                  policy: policy, watcher: watcher, minute: minute, nowMs: nowMs)
                    {
                    case .allow:
                        if !metered.isEmpty, !metering.admit(peer: UInt32(peer), bytes: packet.count, in: metered, meter: quotas) {
                            counters.drop(.quotaUsed)
                            continue
                        }
                        sendPeer[i] = UInt32(peer)
                        // A shaped peer's packet over its RateDown waits (or overflows, counted).
                        if limits.down.isShaped(UInt32(peer)),
                            !shapeAllows(limits.down, UInt32(peer), packet, now: now, drop: .rateOverflowDown)
                        {
                            sendPeer[i] = 0
                        }
                        // DNS answers the gateway forwards to the peer teach it names (host rules only).
                        if parsed.sourcePort == 53, parsed.proto == .udp || parsed.proto == .tcp,
                            policy.compiled.hasHostRules
                        {
                            hostGate.learnDNS(parsed, packet, peer: UInt32(peer), nowMs: nowMs)
                        }
                    case .pending:
                        break  // not reached: only a flow's originator (the peer) has packets held
                    case .block:
                        counters.drop(.policyBlock)
                    case .reject:
                        counters.drop(.policyReject)
                        let resetOpener = hostGate.takeRejectOpener()
                        let t = toTun.count
                        if t < toTun.capacity, let len = buildRejection(answering: packet, parsed, into: toTun.slot(t)) {
                            toTun.offsets[t] = 0
                            toTun.lengths[t] = len
                            toTun.count = t + 1
                        }
                        // The reply decided its peer's pending flow: the peer gets a RST in its place.
                        if resetOpener { sendPeer[i] = resetInPlace(rd, slot: i, parsed) ? UInt32(peer) : 0 }
                    }
                }
                // Held packets a decision here released wait for the inbound thread, which owns
                // the up direction's meter run and shaper (`drainHeld`).
                observer?.endBatch()
            }
            if !metered.isEmpty { metering.flush(quotas) }
            if toTun.count > 0 { writeAll(toTun) }

            // 2. Encrypt in place, outside every lock; then the shaped packets due now.
            control.count = 0
            sealOutbound(rd, count: n, peers: sendPeer, valid: valid, control: control, controlValid: controlValid,
                         now: now)
            if control.count > 0 { sendRuns(control, valid: controlValid) }
            rd.count = n
            sendRuns(rd, valid: valid)
            sendShapedDown(shaped, peers: shapedPeer, valid: shapedValid, control: control, controlValid: controlValid)
        }
    }

    /// Encrypts slots `0..<n` of `rd` whose `peers` entry is set, in place (plaintext at 16 bytes
    /// of headroom), marking them sendable in `valid`; packets of a peer without a session wait
    /// for its handshake, whose initiation goes into `control`.
    func sealOutbound(_ rd: PacketBatch, count n: Int, peers sendPeer: UnsafeMutablePointer<UInt32>,
                      valid: UnsafeMutablePointer<Bool>, control: PacketBatch,
                      controlValid: UnsafeMutablePointer<Bool>, now: UInt64)
    {
        for i in 0..<n {
            valid[i] = false
            guard sendPeer[i] != 0 else { continue }
            let peer = PeerHandle(rawValue: sendPeer[i])
            let length = rd.lengths[i]
            switch device.encrypt(peer: peer, buffer: rd.slot(i), payloadLength: length, now: now) {
            case .send(let range, let to):
                rd.offsets[i] = range.lowerBound
                rd.lengths[i] = range.count
                rd.endpoints[i] = to
                valid[i] = true
            case .handshakeNeeded:
                enqueuePending(peer, UnsafeRawBufferPointer(rd.packet(i)))
                if control.count < control.capacity {
                    initiate(peer, retry: false, batch: control, valid: controlValid, now: now)
                }
            case .noEndpoint:
                counters.drop(.noEndpoint)
            case .refused:
                counters.drop(.peerRefused)
            case .unknownPeer:
                counters.drop(.noRoute)  // removed (e.g. over UAPI) while its route was in this batch
            case .bufferTooSmall, .handshakeInProgress:
                counters.drop(.malformedOutbound)
            }
        }
    }

    // MARK: timers

    func timerLoop() {
        let control = PacketBatch(capacity: 64, slotSize: datagramSlotSize)
        let valid = UnsafeMutablePointer<Bool>.allocate(capacity: 64)
        defer { valid.deallocate() }
        // Answers to rejected flows that stopped waiting for their host: (peer, slot, length).
        var rejects: [(peer: PeerHandle, slot: Int, length: Int)] = []
        rejects.reserveCapacity(64)
        while running.load(ordering: .relaxed) {
            Sys.sleep(milliseconds: Int(options.tickMilliseconds))
            if let wedge = options.testWedgeFile, access(wedge, F_OK) == 0 { continue }  // test hook: no progress
            beatTimers.add(1, ordering: .relaxed)
            let now = clock.boottimeNanoseconds()
            control.count = 0
            for action in device.tick(now: now) {
                if control.count == control.capacity {
                    sendRuns(control, valid: valid)
                    control.count = 0
                }
                switch action {
                case .sendInitiation(let peer, let retry):
                    initiate(peer, retry: retry, batch: control, valid: valid, now: now)
                case .sendKeepalive(let peer):
                    let k = control.count
                    control.count = k + 1
                    seal(peer: peer, batch: control, slot: k, length: 0, now: now, valid: valid)
                case .handshakeGaveUp(let peer):
                    pending.withLock { $0[peer.rawValue]?.removeAll() }
                case .keysZeroed:
                    break
                }
            }
            if control.count > 0 { sendRuns(control, valid: valid) }
            let nowMs = Int64(now / 1_000_000)
            withFlows { table in
                observer?.tick()
                _ = table.expire(now: nowMs, budget: options.expiryBudget) { ended in reportEnded(ended, observer) }
                events?.timerTick(flows: table, monoMs: nowMs)
                observer?.endBatch()
            }
            // Pending flows past their wait are decided without a host; a rejected one's
            // answer goes back to its peer. Their released packets leave with the next data-path
            // batch (or its idle wake-up, within 250 ms).
            control.count = 0
            rejects.removeAll(keepingCapacity: true)
            withFlows { table in expirePending(table, nowMs: nowMs, control: control, rejects: &rejects) }
            if !rejects.isEmpty {
                for r in rejects { seal(peer: r.peer, batch: control, slot: r.slot, length: r.length, now: now, valid: valid) }
                sendRuns(control, valid: valid)
            }
            if let boundary = policy.nextBoundary, clock.wallMilliseconds() / 1000 >= boundary {
                restampPolicy()
                log.info("policy: time boundary passed; generation \(policy.generation), flows re-evaluate")
            }
        }
    }

    // MARK: shared steps

    /// A refused handshake for the live ring, with the admission's reason (`code`, else asked;
    /// nothing when no observer is attached).
    func noteRefusal(_ peer: PeerHandle, code: RefusalCode? = nil) {
        guard let observer else { return }
        observer.noteRefusal(peer: peer.rawValue, reason: (code ?? admission?.refusalCode(peer: peer) ?? .unknown).rawValue)
    }

    /// Inbound thread, idle: writes the packets released by flows that stopped waiting for their
    /// host (decided by the timer or by a reply the outbound thread read).
    func releaseHeld(into toTun: PacketBatch, metering: inout QuotaRun) {
        toTun.count = 0
        let metered = quotas.current
        let now = clock.boottimeNanoseconds()
        withFlows { _ in drainHeld(into: toTun, metered: metered, metering: &metering, now: now) }
        if !metered.isEmpty { metering.flush(quotas) }
        if toTun.count > 0 { writeAll(toTun) }
    }

    /// Inbound thread, flow lock held: appends the packets decided flows held while they waited
    /// for their host, oldest first. They are the peer's up-direction packets and were neither
    /// metered nor shaped while held: here they are, like every other packet the peer sends — a
    /// used-up quota drops them (`quotaUsed`), a shaped peer's wait in its RateUp queue.
    /// Only this thread drains them, since it owns the up direction's `QuotaRun` and `Shaper`.
    @inline(__always)
    func drainHeld(into toTun: PacketBatch, metered: QuotaMeter.Snapshot, metering: inout QuotaRun, now: UInt64) {
        guard hostGate.hasReleased else { return }
        let up = limits.up
        hostGate.drain(into: toTun) { peer, packet in
            if !metered.isEmpty, !metering.admit(peer: peer, bytes: packet.count, in: metered, meter: quotas) {
                counters.drop(.quotaUsed)
                return false
            }
            if up.isShaped(peer), !shapeAllows(up, peer, packet, now: now, drop: .rateOverflowUp) { return false }
            return true
        }
    }

    /// Tracks the packet's flow and returns its verdict: the cached one when it carries the
    /// current generation, otherwise a fresh evaluation (stamped and counted).
    /// `fromPeer`: the packet came out of the tunnel (its sender is the peer). The observer (live
    /// ring, capture) sees every tracked packet here with its verdict.
    ///
    /// An ICMP error about a flow we track (fragmentation needed, port unreachable, …) takes that
    /// flow's verdict, so return traffic of an allowed flow passes even under `default in block`.
    @inline(__always)
    func decide(_ table: FlowTable, _ p: ParsedPacket, _ packet: UnsafeRawBufferPointer, peer: UInt32, fromPeer: Bool,
                policy: ActivePolicy, watcher: (any PacketObserving)?, minute: Int, nowMs: Int64) -> Verdict
    {
        let observer = watcher  // the batch's observer, nil when nothing watches
        if p.isICMPError, p.payloadOffset < packet.count,
            let quoted = try? PacketParser.parseQuoted(UnsafeRawBufferPointer(rebasing: packet[p.payloadOffset...]))
        {
            let (handle, ended) = table.lookup(quoted.flowKey.key, now: nowMs)
            if let ended { reportEnded(ended, observer) }  // the lookup found the quoted flow expired: it ends here
            if let handle, table[handle].verdictGeneration == policy.generation,
                let cached = Verdict(rawValue: table[handle].verdictAction)
            {
                return cached
            }
        }
        let (key, reversed) = p.flowKey
        // A new flow over the peer's caps (or into a table full of other peers' flows) is
        // refused: counted there; `.pending` tells the loop the packet is consumed.
        guard let t = trackOwned(table, key, reversed: reversed, length: packet.count, tcpFlags: p.tcpFlags,
                                 nowMs: nowMs, peer: peer) else {
            if let ended = table.lastRefusedEnded { reportEnded(ended, observer) }
            return .pending
        }
        if let ended = t.ended { reportEnded(ended, observer) }
        let entry = table[t.handle]
        if entry.verdictGeneration == policy.generation, let cached = Verdict(rawValue: entry.verdictAction) {
            if cached == .pending {
                return pendingPacket(table, t.handle, p, packet, peer: peer, fromPeer: fromPeer, isReply: t.isReply,
                                     policy: policy, watcher: observer, nowMs: nowMs)
            }
            observer?.packet(ObservedBytes(packet), p, handle: t.handle, entry: entry, opened: t.opened,
                             action: cached, peer: peer, fromPeer: fromPeer)
            return cached
        }
        // The flow's originator sent its first packet; a reply's sender is the other side.
        let originIsPeer = t.isReply ? !fromPeer : fromPeer
        var q = PolicyQuery(
            direction: originIsPeer ? .out : .in, proto: p.proto,
            source: t.isReply ? p.destination : p.source, destination: t.isReply ? p.source : p.destination,
            sourcePort: t.isReply ? p.destinationPort : p.sourcePort,
            destinationPort: t.isReply ? p.sourcePort : p.destinationPort,
            peer: policy.peerID(peer), tier: policy.tier(peer), host: nil, minuteOfWeek: minute)
        var v = policy.compiled.evaluate(q)
        var host: String?
        if policy.compiled.hasHostRules {
            // Host rules (DESIGN.md §5): the name from the flow's first payload, else the DNS
            // names its peer looked up for the destination. A flow whose action could change
            // with a name not yet read waits (pending); any other is decided now, without a
            // host (same action for every name: recorded by the rule a host-less flow matches).
            let slot = t.handle.index
            hostGate.prepare()
            hostGate.claim(slot, id: entry.id)
            if hostGate.isPending(slot) {
                // A new policy generation while the flow waits: it keeps waiting, under it.
                hostGate.updateQuery(slot, q)
                table.setVerdict(t.handle, generation: policy.generation, action: Verdict.pending.rawValue, ruleIndex: -1)
                return pendingPacket(table, t.handle, p, packet, peer: peer, fromPeer: fromPeer, isReply: t.isReply,
                                     policy: policy, watcher: observer, nowMs: nowMs)
            }
            if let (name, source) = hostGate.host(slot), source != .dns {
                q.host = name
                v = policy.compiled.evaluate(q)
                host = name
            } else if policy.compiled.verdictDependsOnHost(q, v) {
                let learnable = originIsPeer && !hostGate.isDone(slot)
                    && (p.proto == .tcp || (p.proto == .udp && q.destinationPort == 443))
                if learnable && hostGate.begin(t.handle, id: entry.id, peer: peer, query: q, quic: p.proto == .udp,
                                               opened: t.opened, nowMs: nowMs)
                {
                    table.setVerdict(t.handle, generation: policy.generation, action: Verdict.pending.rawValue, ruleIndex: -1)
                    return pendingPacket(table, t.handle, p, packet, peer: peer, fromPeer: fromPeer, isReply: t.isReply,
                                         policy: policy, watcher: observer, nowMs: nowMs)
                }
                (v, host) = withoutReadHost(q, peer: peer, policy: policy, nowMs: nowMs)
                hostGate.markDone(slot, host: host, source: host == nil ? nil : .dns)
            }
        }
        policy.hit(v)
        table.setVerdict(t.handle, generation: policy.generation, action: v.action.rawValue, ruleIndex: v.ruleIndex)
        // The observer first: it assigns the flow's first capture location, which history records.
        if let observer {
            observer.packet(ObservedBytes(packet), p, handle: t.handle, entry: table[t.handle], opened: t.opened,
                            action: v.action, peer: peer, fromPeer: fromPeer)
        }
        if let events {
            events.flowDecided(FlowDecision(entry: table[t.handle], peer: peer, verdict: v, policy: policy, opened: t.opened, host: host))
        }
        if let host { self.observer?.noteFlowHost(flowID: entry.id, peer: peer, verdict: v.action, host: host) }
        return v.action
    }

    /// A flow left the table (expired, evicted, ended by a refused insert): history, then the
    /// observer, each told once, with the flow's owner. Every end goes through here. Flow lock held.
    @inline(__always)
    func reportEnded(_ ended: FlowRecord, _ observer: (any PacketObserving)?) {
        events?.flowEnded(ended)
        observer?.flowEnded(ended, peer: ended.owner > 0 ? ended.owner : observedNoPeer)
    }

    /// A packet of a pending flow. Handshake packets (no payload) pass; the originator's payload
    /// is read for the host (held while more is needed); a reply with payload (the server spoke
    /// first) shows the flow names none. Once the flow is decided its held packets are released
    /// (allow: `HostGate.drain`) or dropped, and the verdict is cached. Returns `.pending` for a
    /// packet that was held (consumed, not a drop), else the verdict this packet follows.
    func pendingPacket(_ table: FlowTable, _ handle: FlowHandle, _ p: ParsedPacket, _ packet: UnsafeRawBufferPointer,
                       peer: UInt32, fromPeer: Bool, isReply: Bool, policy: ActivePolicy,
                       watcher observer: (any PacketObserving)?, nowMs: Int64) -> Verdict
    {
        let slot = handle.index
        let step: HostGate.Step?
        if !isReply {
            step = hostGate.step(slot, p, packet)
        } else {
            step = p.payloadLength > 0 && !p.tcpFlags.contains(.rst) ? HostGate.Step.none : nil
        }
        guard let step else {
            observer?.packet(ObservedBytes(packet), p, handle: handle, entry: table[handle], opened: false,
                             action: .pending, peer: peer, fromPeer: fromPeer)
            return .allow
        }
        let record = hostGate.record(slot)
        var q = record.query
        q.peer = policy.peerID(record.peer)
        q.tier = policy.tier(record.peer)
        let v: PolicyVerdict
        var host: String?
        var source: HostSource?
        switch step {
        case .held:
            observer?.packet(ObservedBytes(packet), p, handle: handle, entry: table[handle], opened: false,
                             action: .pending, peer: peer, fromPeer: fromPeer)
            return .pending
        case .found(let name, let from):
            counters.host(.learned)
            q.host = name
            v = policy.compiled.evaluate(q)
            host = name
            source = from
        case .none, .overflow:
            (v, host) = withoutReadHost(q, peer: record.peer, policy: policy, nowMs: nowMs)
            if host != nil { source = .dns }
        case .blockUnknown:
            counters.host(.quicUnknownBlocked)
            v = PolicyVerdict(action: .block, ruleIndex: -1, direction: q.direction)
        }
        hostGate.finish(slot, verdict: v.action)
        settlePending(table, handle, record: record, verdict: v, host: host, source: source, policy: policy,
                      quicUnknown: { if case .blockUnknown = step { true } else { false } }())
        // A reply (the server spoke first) decided `reject`: it is answered, and the peer that
        // opened the flow, waiting on it, is reset too (the outbound loop builds that RST).
        if isReply, v.action == .reject, p.proto == .tcp { hostGate.rejectOpener = true }
        observer?.packet(ObservedBytes(packet), p, handle: handle, entry: table[handle], opened: false,
                         action: v.action, peer: peer, fromPeer: fromPeer)
        return v.action
    }

    /// Caches the final verdict of a flow that was pending and tells history (with its host).
    func settlePending(_ table: FlowTable, _ handle: FlowHandle, record: HostGate.Record, verdict v: PolicyVerdict,
                       host: String?, source: HostSource?, policy: ActivePolicy, quicUnknown: Bool = false)
    {
        hostGate.markDone(handle.index, host: host, source: source)
        policy.hit(v)
        table.setVerdict(handle, generation: policy.generation, action: v.action.rawValue, ruleIndex: v.ruleIndex)
        events?.flowDecided(FlowDecision(entry: table[handle], peer: record.peer, verdict: v, policy: policy, opened: record.opened,
                                         host: host, quicUnknown: quicUnknown))
        if let host { observer?.noteFlowHost(flowID: table[handle].id, peer: record.peer, verdict: v.action, host: host) }
    }

    /// The verdict of a flow whose own payload gave no name: with the DNS names its peer looked
    /// up for the destination (any matching counts), and the first of them to show; without a
    /// host when none is known.
    func withoutReadHost(_ q: PolicyQuery, peer: UInt32, policy: ActivePolicy, nowMs: Int64) -> (PolicyVerdict, String?) {
        var plain = q
        plain.host = nil
        guard q.direction == .out else { return (policy.compiled.evaluate(plain), nil) }
        let names = hostGate.dnsNames(peer: peer, address: q.destination, nowMs: nowMs)
        var it = names.makeIterator()
        guard let first = it.next() else { return (policy.compiled.evaluate(plain), nil) }
        return (policy.compiled.evaluate(plain, anyOf: names), String(decoding: first, as: UTF8.self))
    }

    /// Decides the pending flows that learned nothing within `hostPendingTimeoutMs`, without a
    /// host (their DNS names count); a rejected one with held packets gets its answer built
    /// into `control` for `peer` (returned, to encrypt after the lock). Timer thread, flow lock held.
    func expirePending(_ table: FlowTable, nowMs: Int64, control: PacketBatch,
                       rejects: inout [(peer: PeerHandle, slot: Int, length: Int)])
    {
        let policy = self.policy
        hostGate.expire(before: nowMs - options.hostPendingTimeoutMs, alive: { table[$0].id == $1 }) { record in
            var q = record.query
            q.peer = policy.peerID(record.peer)
            q.tier = policy.tier(record.peer)
            let (v, host) = withoutReadHost(q, peer: record.peer, policy: policy, nowMs: nowMs)
            let last = hostGate.finish(record.handle.index, verdict: v.action)
            settlePending(table, record.handle, record: record, verdict: v, host: host, source: host == nil ? nil : .dns,
                          policy: policy)
            if v.action == .reject, let last, control.count < control.capacity, let parsed = try? PacketParser.parse(last) {
                let k = control.count
                let room = UnsafeMutableRawBufferPointer(rebasing: control.slot(k)[16..<(16 + min(tun.mtu, datagramSlotSize - 48))])
                if let len = buildRejection(answering: last, parsed, into: room) {
                    control.count = k + 1
                    rejects.append((PeerHandle(rawValue: record.peer), k, len))
                }
            }
        }
    }

    /// Gives a later fragment its datagram's ports (RFC 791 / RFC 8200 reassembly key), so it
    /// joins its flow; false for a later fragment whose first fragment was not seen (dropped).
    /// Call with the `flows` lock held.
    @inline(__always)
    func resolveFragment(_ p: inout ParsedPacket, nowMs: Int64) -> Bool {
        guard p.fragment.isFragment else { return true }
        return fragments.tracker.resolve(&p, now: nowMs)
    }

    /// The answer to a rejected packet: a TCP RST for TCP, ICMP port unreachable for UDP, ICMP
    /// administratively prohibited otherwise (RFC 1812 §5.2.7.1). Nil when the packet must not be
    /// answered (an RST, an ICMP error, a later fragment, multicast).
    func buildRejection(answering packet: UnsafeRawBufferPointer, _ p: ParsedPacket,
                        into out: UnsafeMutableRawBufferPointer) -> Int?
    {
        do {
            if p.proto == .tcp {
                return try ReplyBuilder.tcpReset(answering: packet, parsed: p, into: out)
            }
            let reason: UnreachableReason = p.proto == .udp ? .portUnreachable : .administrativelyProhibited
            return try ReplyBuilder.unreachable(answering: packet, parsed: p, reason: reason, into: out)
        } catch {
            return nil
        }
    }

    /// Replaces the TCP segment in `batch`'s slot `k` (plaintext at its offset) by the RST that
    /// stands in for it on its way (`ReplyBuilder.tcpReset(continuing:)`), at 16 bytes of
    /// headroom as `sealOutbound` expects; false when none can be built (the slot is then unused).
    func resetInPlace(_ batch: PacketBatch, slot k: Int, _ p: ParsedPacket) -> Bool {
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { tmp in
            guard let len = try? ReplyBuilder.tcpReset(continuing: UnsafeRawBufferPointer(batch.packet(k)), parsed: p, into: tmp)
            else { return false }
            (batch.slot(k).baseAddress! + 16).copyMemory(from: tmp.baseAddress!, byteCount: len)
            batch.offsets[k] = 16
            batch.lengths[k] = len
            return true
        }
    }

    /// Encrypts the plaintext at `slot`'s offset 16 for `peer` in place and marks the slot
    /// sendable (or not).
    func seal(peer: PeerHandle, batch: PacketBatch, slot k: Int, length: Int, now: UInt64,
              valid: UnsafeMutablePointer<Bool>)
    {
        valid[k] = false
        switch device.encrypt(peer: peer, buffer: batch.slot(k), payloadLength: length, now: now) {
        case .send(let range, let to):
            batch.offsets[k] = range.lowerBound
            batch.lengths[k] = range.count
            batch.endpoints[k] = to
            valid[k] = true
        case .handshakeNeeded:
            if length > 0 {
                enqueuePending(peer, UnsafeRawBufferPointer(rebasing: batch.slot(k)[16..<(16 + length)]))
            }
        case .noEndpoint:
            counters.drop(.noEndpoint)
        case .refused:
            counters.drop(.peerRefused)
        case .unknownPeer, .bufferTooSmall, .handshakeInProgress:
            break
        }
    }

    /// Builds a handshake initiation for `peer` into the next slot of `batch`.
    func initiate(_ peer: PeerHandle, retry: Bool, batch: PacketBatch, valid: UnsafeMutablePointer<Bool>, now: UInt64) {
        let k = batch.count
        guard k < batch.capacity else { return }
        switch device.initiation(for: peer, retry: retry, into: batch.slot(k), now: now, wallClock: wallNanoseconds()) {
        case .send(let range, let to):
            batch.offsets[k] = range.lowerBound
            batch.lengths[k] = range.count
            batch.endpoints[k] = to
            valid[k] = true
            batch.count = k + 1
        case .noEndpoint:
            counters.drop(.noEndpoint)
        default:
            break
        }
    }

    /// Sends every run of consecutive valid slots of `batch` (`0 ..< batch.count`). A socket that
    /// stays full for a few retries costs the rest of the run (counted).
    func sendRuns(_ batch: PacketBatch, valid: UnsafeMutablePointer<Bool>) {
        let n = batch.count
        var i = 0
        while i < n {
            while i < n && !valid[i] { i += 1 }
            var j = i
            while j < n && valid[j] { j += 1 }
            if j > i {
                batch.count = j
                var start = i
                var tries = 0
                while start < j {
                    let sent = (try? bind.send(batch, from: start)) ?? (j - start)
                    start += sent
                    if sent == 0 {
                        tries += 1
                        if tries > 50 {
                            counters.drop(.udpBusy, UInt64(j - start))
                            break
                        }
                        sched_yield()
                    }
                }
            }
            i = j
        }
        batch.count = n
    }

    /// Writes all of `batch` to the TUN device, retrying briefly when it would block.
    func writeAll(_ batch: PacketBatch) {
        let n = batch.count
        var written = 0
        var tries = 0
        while written < n {
            let w = (try? tun.writePackets(batch)) ?? n
            if w >= batch.count { written += w; break }
            // Shift the unwritten rest to the front by offsets: slots keep their data in place.
            written += w
            if w == 0 {
                tries += 1
                if tries > 50 {
                    counters.drop(.tunBusy, UInt64(n - written))
                    break
                }
                sched_yield()
                continue
            }
            // Rare: the device took part of the batch. Move the remaining slots' packets forward.
            for s in 0..<(batch.count - w) {
                let from = batch.packet(s + w)
                batch.slot(s).baseAddress!.copyMemory(from: from.baseAddress!, byteCount: from.count)
                batch.offsets[s] = 0
                batch.lengths[s] = from.count
            }
            batch.count -= w
        }
        batch.count = n
    }
}

/// Local minute of the week for `during` rules, recomputed once per second; the UTC offset is
/// re-read once a minute (daylight-saving changes).
struct MinuteClock {
    private var second: Int64 = .min
    private var minute = 0
    private var offset = 0
    private var offsetReadAt: Int64 = .min

    mutating func minuteOfWeek(epochMs: Int64) -> Int {
        let s = epochMs / 1000
        if s != second {
            if offsetReadAt == .min || s - offsetReadAt >= 60 || s < offsetReadAt {
                offset = ActivePolicy.localUTCOffset(epochSeconds: s)
                offsetReadAt = s
            }
            minute = PolicyClock.minuteOfWeek(epochSeconds: s, utcOffsetSeconds: offset)
            second = s
        }
        return minute
    }
}
