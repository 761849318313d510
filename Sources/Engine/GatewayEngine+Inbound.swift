// The inbound thread: UDP → decrypt → flow decision → TUN (the pipeline is narrated at the top of
// GatewayEngine.swift).
import SystemIO
import Core
import Glibc
import Packet
import Policy
import Runtime
import WireGuard

extension GatewayEngine {
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
            withFlowState { s in
                syncFlowCaps(s, directory, now: now)
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
                    guard resolveFragment(s, &parsed, nowMs: nowMs) else {
                        counters.drop(.unattributableFragment)
                        continue
                    }
                    // Cryptokey routing (whitepaper §2): the inner source must be one of the peer's.
                    guard trie.lookupRaw(parsed.source) == Int32(bitPattern: peer) else {
                        counters.drop(.spoofedSource)
                        continue
                    }
                    switch decide(s, parsed, packet, peer: peer, fromPeer: true, policy: policy, watcher: watcher,
                                  minute: minute, nowMs: nowMs)
                    {
                    case .allow:
                        // Packets a flow held while it waited for its host go first (this packet
                        // may be the one that decided it), metered and shaped before it.
                        drainHeld(s, into: toTun, metered: metered, metering: &metering, now: now)
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
                drainHeld(s, into: toTun, metered: metered, metering: &metering, now: now)
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
}
