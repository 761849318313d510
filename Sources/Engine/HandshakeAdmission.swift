import Core
import WireGuard

/// What admission decided about one handshake: a value the engine acts on.
public enum AdmissionDecision: Equatable, Sendable {
    /// Answer it (an initiation) or keep it (a completed handshake).
    case admit
    /// Send nothing back; counted and recorded as a refusal for `code`.
    case refuse(RefusalCode)
    /// No answer yet: something the decision needs is being fetched on another thread (a window
    /// opening in the shared store). The initiation is neither answered nor recorded; the engine
    /// asks again for a few seconds, and the client retries anyway (REKEY_TIMEOUT, 5 s).
    case later
}

/// A change admission wants made to a peer in the WireGuard device, returned as a value: the
/// engine applies it before acting on the decision, so admission never calls into the device.
public enum PeerAction: Equatable, Sendable {
    /// Refuse the peer's handshakes (`WireGuardDevice.setRefused(_, true)`) from now on.
    case refuse(PeerHandle)
    /// Stop refusing them (a pause ended).
    case unrefuse(PeerHandle)
    /// End its session at once: keys dropped, queued packets discarded.
    case endSession(PeerHandle)
}

/// A decision and the peer changes that go with it.
public struct Admission: Equatable, Sendable {
    public var decision: AdmissionDecision
    public var actions: [PeerAction]

    public init(_ decision: AdmissionDecision, actions: [PeerAction] = []) {
        self.decision = decision
        self.actions = actions
    }

    /// Admitted, nothing to change.
    public static let admit = Admission(.admit)
}

/// Who may complete a handshake (the free-session watchdog, docs/session.md): asked after the device
/// authenticated an initiation and before it answers, and when a handshake completed. The daemon
/// installs the watchdog; an engine without one admits every peer the device does not refuse.
///
/// Calls come from the engine's handshake thread (`tv-handshake`, one message at a time), outside
/// every engine lock. Each answer is computed from memory — the registry, the session rules, the
/// windows the watchdog holds — and returned as a value; an implementation never calls back into
/// the engine or the device and never runs a store statement: what needs one (opening a window,
/// in the shared store and on disk; a refusal row) runs on another thread, and an initiation
/// whose window is opening there is answered `.later` until it is open.
public protocol HandshakeAdmission: AnyObject, Sendable {
    /// An initiation from `peer` was authenticated (mac1, its static key, a fresh timestamp); the
    /// device has built nothing yet. `refused`: the device refuses the peer (`setRefused`) now —
    /// the decision may differ (a pause that just ended admits at once, with `.unrefuse`).
    func admitInitiation(peer: PeerHandle, refused: Bool) -> Admission
    /// A handshake with `peer` completed: its initiation was answered (after an admit above), or
    /// it answered ours. `.refuse` refuses it after all (its window ended in between): the engine
    /// sends nothing back and applies the actions (keys dropped).
    func handshakeCompleted(peer: PeerHandle) -> Admission
    /// An initiation from `peer` was refused (by a decision above or by the device): one attempt,
    /// for the records.
    func handshakeRefused(peer: PeerHandle)
    /// Why `peer` is refused now, for a refusal the device made on its own (its `setRefused`).
    func refusalCode(peer: PeerHandle) -> RefusalCode
}

extension HandshakeAdmission {
    public func refusalCode(peer: PeerHandle) -> RefusalCode { .unknown }
}
