// The data path's shared steps: held packets, rejections, sealing and sending. The four loops
// are in GatewayEngine+Inbound, +Handshake, +Outbound and +Timers; flow decisions in
// GatewayEngine+FlowDecisions (the pipeline is narrated at the top of GatewayEngine.swift).
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
        withFlowState { s in drainHeld(s, into: toTun, metered: metered, metering: &metering, now: now) }
        if !metered.isEmpty { metering.flush(quotas) }
        if toTun.count > 0 { writeAll(toTun) }
    }

    /// Inbound thread, flow lock held: appends the packets decided flows held while they waited
    /// for their host, oldest first. They are the peer's up-direction packets and were neither
    /// metered nor shaped while held: here they are, like every other packet the peer sends — a
    /// used-up quota drops them (`quotaUsed`), a shaped peer's wait in its RateUp queue.
    /// Only this thread drains them, since it owns the up direction's `QuotaRun` and `Shaper`.
    @inline(__always)
    func drainHeld(_ s: FlowState, into toTun: PacketBatch, metered: QuotaMeter.Snapshot, metering: inout QuotaRun, now: UInt64) {
        let hostGate = s.hostGate
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
