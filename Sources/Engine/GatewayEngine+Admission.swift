import Core
import WireGuard

// Admission on the handshake thread: the decision is a value (`HandshakeAdmission`), the peer
// actions that come with it are applied here, then the device answers or the initiation is
// dropped. Nothing here waits on anything but the device's own short locks.

extension GatewayEngine {
    /// What became of an authenticated initiation.
    enum InitiationOutcome {
        /// The device's answer (`.sendResponse`, or `.refused`/`.drop` when it refused after all).
        case answered(ReceiveResult)
        /// Admission refused it.
        case refused(RefusalCode)
        /// Admission has no answer yet: park it and ask again.
        case later
    }

    /// Puts `token` to admission (none: the device's own refusal decides), applies the peer
    /// actions, and has the device answer an admitted one into `output`.
    func answer(_ token: InitiationToken, now: UInt64, output: UnsafeMutableRawBufferPointer) -> InitiationOutcome {
        guard let admission else {
            return token.refused ? .answered(.refused(peer: token.peerHandle)) : .answered(device.respond(to: token, now: now, output: output))
        }
        let a = admission.admitInitiation(peer: token.peerHandle, refused: token.refused)
        apply(a.actions)
        switch a.decision {
        case .admit: return .answered(device.respond(to: token, now: now, output: output))
        case .refuse(let code): return .refused(code)
        case .later: return .later
        }
    }

    /// Tells admission a handshake with `peer` completed and applies its actions.
    func completed(_ peer: PeerHandle) -> AdmissionDecision {
        guard let admission else { return .admit }
        let a = admission.handshakeCompleted(peer: peer)
        apply(a.actions)
        return a.decision
    }

    /// Applies admission's peer actions to the device, in order.
    func apply(_ actions: [PeerAction]) {
        for action in actions {
            switch action {
            case .refuse(let p): device.setRefused(p, true)
            case .unrefuse(let p): device.setRefused(p, false)
            case .endSession(let p): kick(p)
            }
        }
    }
}

/// Initiations admission answered `.later`, one per peer (the newest), owned by the handshake
/// thread. Bounded: beyond `capacity` the oldest is dropped (its client retries).
struct ParkedInitiations {
    private var items: [(token: InitiationToken, since: UInt64)] = []
    let capacity = 256

    var isEmpty: Bool { items.isEmpty }

    mutating func park(_ token: InitiationToken, now: UInt64) {
        remove(token.peerHandle)
        if items.count == capacity { items.removeFirst() }
        items.append((token, now))
    }

    mutating func remove(_ peer: PeerHandle) {
        items.removeAll { $0.token.peerHandle == peer }
    }

    /// Offers each parked initiation to `ask` (true: it was answered or refused — done); the ones
    /// older than `giveUpAfter` are dropped unanswered.
    mutating func retry(now: UInt64, giveUpAfter: UInt64, _ ask: (InitiationToken) -> Bool) {
        items.removeAll { item in ask(item.token) || now &- item.since > giveUpAfter }
    }
}
