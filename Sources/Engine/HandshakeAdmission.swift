import Core
import WireGuard

/// Who may complete a handshake (the free-session watchdog, DESIGN.md §6): asked before the
/// WireGuard device answers an initiation, told when a handshake completed or was refused. The
/// daemon installs the watchdog; an engine without one admits every peer.
///
/// Calls come from the engine's handshake thread (`tv-handshake`, one message at a time), outside
/// every engine lock; implementations may take their own short locks and call back into the
/// engine's peer operations (refuse, drop keys), never block: while a call runs, further handshakes
/// wait in the bounded handshake queue (transport data keeps flowing on the inbound thread).
public protocol HandshakeAdmission: AnyObject, Sendable {
    /// An initiation from `peer` was authenticated (mac1, its static key, a fresh timestamp) and the
    /// device is about to build the response and a keypair — also when the device refuses the peer
    /// (`setRefused`), so the decision is taken at arrival (a pause that just ended lets the peer in
    /// at once; the implementation lifts the refusal). False refuses it: nothing is built or sent,
    /// no handshake is reported; the engine counts a refusal and calls ``handshakeRefused(peer:)``.
    func admitInitiation(peer: PeerHandle) -> Bool
    /// A handshake with `peer` completed: its initiation was answered (after ``admitInitiation(peer:)``
    /// said yes), or it answered ours. Return false to refuse it after all (its window ended in
    /// between): the engine sends nothing back; the implementation has dropped the keys.
    func handshakeCompleted(peer: PeerHandle) -> Bool
    /// An initiation from `peer` was refused: the device refuses the peer (`setRefused`) or
    /// ``admitInitiation(peer:)`` said no.
    func handshakeRefused(peer: PeerHandle)
    /// Why `peer` is refused now (after a refusal above), for the live ring's refusal event.
    func refusalCode(peer: PeerHandle) -> RefusalCode
}

extension HandshakeAdmission {
    public func refusalCode(peer: PeerHandle) -> RefusalCode { .unknown }
}
