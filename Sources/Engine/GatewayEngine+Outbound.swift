// The outbound thread: TUN → flow decision → shaping → encrypt → UDP.
import SystemIO
import Core
import Glibc
import Packet
import Policy
import Runtime
import WireGuard

extension GatewayEngine {
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
            withFlowState { s in
                syncFlowCaps(s, directory, now: now)
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
                    guard resolveFragment(s, &parsed, nowMs: nowMs) else {
                        counters.drop(.unattributableFragment)
                        continue
                    }
                    let peer = trie.lookupRaw(parsed.destination)
                    guard peer > 0 else {
                        counters.drop(.noRoute)
                        continue
                    }
                    switch decide(s, parsed, packet, peer: UInt32(peer), fromPeer: false,
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
                            s.hostGate.learnDNS(parsed, packet, peer: UInt32(peer), nowMs: nowMs)
                        }
                    case .pending:
                        break  // not reached: only a flow's originator (the peer) has packets held
                    case .block:
                        counters.drop(.policyBlock)
                    case .reject:
                        counters.drop(.policyReject)
                        let resetOpener = s.hostGate.takeRejectOpener()
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
}
