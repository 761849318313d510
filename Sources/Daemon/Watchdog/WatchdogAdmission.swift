import Core
import Engine
import WireGuard

/// The watchdog as the engine's ``HandshakeAdmission``: the engine's handshake calls, with the
/// watchdog's time (`WatchdogTime`: never steps; the watchdog itself takes `now` as an argument).
/// Decisions come back as values with their peer actions; the engine applies them.
public final class WatchdogAdmission: HandshakeAdmission {
    public let watchdog: Watchdog
    let time: WatchdogTime

    /// Admission by `watchdog` at the times of `time`.
    public init(_ watchdog: Watchdog, time: WatchdogTime) {
        self.watchdog = watchdog
        self.time = time
    }

    public func admitInitiation(peer: PeerHandle, refused: Bool) -> Admission {
        watchdog.decideInitiation(peer, now: time.now())
    }

    public func handshakeCompleted(peer: PeerHandle) -> Admission {
        watchdog.completeHandshake(peer, now: time.now())
    }

    public func handshakeRefused(peer: PeerHandle) {
        watchdog.handshakeRefusedLater(peer, now: time.now())
    }

    public func refusalCode(peer: PeerHandle) -> RefusalCode {
        watchdog.refusalCode(peer, now: time.now())
    }
}
