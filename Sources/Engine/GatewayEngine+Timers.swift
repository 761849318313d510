// The timer thread: WireGuard timers, flow expiry, pending flows past their wait, policy time
// boundaries.
import SystemIO
import Core
import Glibc
import Packet
import Policy
import Runtime
import WireGuard

extension GatewayEngine {
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
            withFlowState { s in expirePending(s, nowMs: nowMs, control: control, rejects: &rejects) }
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
}
