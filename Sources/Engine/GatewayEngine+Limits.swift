// The data-path limits: rate shaping (`RateUp`/`RateDown`) and flow caps
// (`MaxFlows`/`NewFlowRate`); docs/limits.md. The loops (GatewayEngine+Inbound, +Outbound) call
// the few functions here, so an unlimited peer costs one array load per packet.
import Core
import Packet
import SystemIO
import WireGuard

/// The engine's shaping state. `up` belongs to the inbound thread and `down` to the outbound
/// thread (each touches only its own, never shared). The flow caps are in `FlowState`.
final class LimitBox: @unchecked Sendable {
    // Safe: see above — every field has exactly one owner at a time (a thread, or the flow lock).
    let up = Shaper()
    let down = Shaper()
}

extension GatewayEngine {
    // MARK: shaping

    /// Brings `shaper` up to the registry's peers when they changed (one version compare per batch).
    @inline(__always)
    func syncShaper(_ shaper: Shaper, up: Bool, _ directory: PeerDirectory, now: UInt64) {
        guard shaper.version != directory.version else { return }
        shaper.configure(directory.all.map { p in
            (p.handle.rawValue, up ? p.limits.rateUpBitsPerSecond : p.limits.rateDownBitsPerSecond)
        }, now: now)
        shaper.version = directory.version
    }

    /// The poll timeout of a data-path thread: 250 ms, or less while its shaper holds packets.
    @inline(__always)
    func shapedPollTimeout(_ shaper: Shaper) -> Int32 {
        shaper.hasQueued ? shaper.pollTimeout(now: clock.boottimeNanoseconds(), idle: 250) : 250
    }

    /// An allowed packet of a shaped peer: true when it goes now, false when held or dropped
    /// (counted as `drop`).
    func shapeAllows(_ shaper: Shaper, _ peer: UInt32, _ packet: UnsafeRawBufferPointer, now: UInt64,
                     drop: GatewayDrop) -> Bool
    {
        switch shaper.offer(peer, packet, now: now) {
        case .pass: return true
        case .queued: return false
        case .overflow:
            counters.drop(drop)
            return false
        }
    }

    /// Inbound thread: appends the up-direction packets due now to `toTun` (as room allows).
    func releaseShapedUp(into toTun: PacketBatch, now: UInt64) {
        let up = limits.up
        guard up.hasQueued, toTun.count < toTun.capacity else { return }
        up.release(now: now, maxPackets: toTun.capacity - toTun.count) { _, packet in
            let t = toTun.count
            toTun.slot(t).baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: packet.count)
            toTun.offsets[t] = 0
            toTun.lengths[t] = packet.count
            toTun.count = t + 1
        }
    }

    /// Inbound thread, idle: writes the up-direction packets due now.
    func writeShapedUp(_ toTun: PacketBatch) {
        guard limits.up.hasQueued else { return }
        toTun.count = 0
        releaseShapedUp(into: toTun, now: clock.boottimeNanoseconds())
        if toTun.count > 0 { writeAll(toTun) }
    }

    /// Outbound thread: encrypts and sends the down-direction packets due now (`batch` has 16
    /// bytes of headroom; `peers`/`valid` its per-slot scratch).
    func sendShapedDown(_ batch: PacketBatch, peers: UnsafeMutablePointer<UInt32>, valid: UnsafeMutablePointer<Bool>,
                        control: PacketBatch, controlValid: UnsafeMutablePointer<Bool>)
    {
        let down = limits.down
        guard down.hasQueued else { return }
        let now = clock.boottimeNanoseconds()
        batch.count = 0
        down.release(now: now, maxPackets: batch.capacity) { peer, packet in
            let k = batch.count
            (batch.slot(k).baseAddress! + 16).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
            batch.offsets[k] = 16
            batch.lengths[k] = packet.count
            peers[k] = peer
            batch.count = k + 1
        }
        let n = batch.count
        if n == 0 { return }
        control.count = 0
        sealOutbound(batch, count: n, peers: peers, valid: valid, control: control, controlValid: controlValid, now: now)
        if control.count > 0 { sendRuns(control, valid: controlValid) }
        sendRuns(batch, valid: valid)
    }

    // MARK: flow caps

    /// Brings the flow caps up to the registry's peers when they changed. Flow lock held.
    @inline(__always)
    func syncFlowCaps(_ s: FlowState, _ directory: PeerDirectory, now: UInt64) {
        let caps = s.caps
        guard caps.version != directory.version else { return }
        caps.configure(directory.all.map { ($0.handle.rawValue, $0.limits.maxFlows, $0.limits.newFlowsPerSecond) },
                       now: now)
        caps.version = directory.version
    }

    /// `FlowTable.track` with the peer as the flow's owner and its caps applied. Nil: the new
    /// flow was refused, counted (`flow-limit` or `flow-table-full`) and, for a cap, reported
    /// to `events` (coalesced per peer and second). Flow lock held.
    @inline(__always)
    func trackOwned(_ s: FlowState, _ key: FlowKey, reversed: Bool, length: Int, tcpFlags: TCPFlags,
                    nowMs: Int64, peer: UInt32) -> FlowTrackResult?
    {
        let table = s.table, caps = s.caps
        if !caps.isCapped(peer) {
            if let t = table.track(key, reversed: reversed, length: length, tcpFlags: tcpFlags, now: nowMs, owner: peer) {
                return t
            }
        } else {
            let now = UInt64(nowMs) &* 1_000_000
            if let t = table.track(key, reversed: reversed, length: length, tcpFlags: tcpFlags, now: nowMs, owner: peer,
                                   maxFlows: caps.maxFlows(peer), allowNew: caps.mayOpen(peer, now: now))
            {
                if t.opened { caps.opened(peer, now: now) }
                return t
            }
        }
        switch table.lastRefusal {
        case .tableFull:
            counters.drop(.flowTableFull)
        case .ownerCap:
            counters.drop(.flowLimit)
            if let n = caps.refused(peer, nowMs: nowMs) {
                events?.flowRefused(peer: peer, key: key, reason: .ownerCap, refused: n, monoMs: nowMs)
            }
        }
        return nil
    }
}
