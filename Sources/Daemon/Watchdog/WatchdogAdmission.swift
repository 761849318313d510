import Core
import Engine
import Runtime
import WireGuard

/// The watchdog as the engine's ``HandshakeAdmission``: the engine's handshake calls, with the
/// wall-clock time of `clock` (the watchdog itself takes `now` as an argument everywhere).
public final class WatchdogAdmission: HandshakeAdmission {
    public let watchdog: Watchdog
    let clock: any TimeSource

    /// Admission by `watchdog` at the times of `clock`.
    public init(_ watchdog: Watchdog, clock: any TimeSource) {
        self.watchdog = watchdog
        self.clock = clock
    }

    public func admitInitiation(peer: PeerHandle) -> Bool {
        watchdog.admitInitiation(peer, now: clock.wallMilliseconds())
    }

    public func handshakeCompleted(peer: PeerHandle) -> Bool {
        watchdog.handshakeCompleted(peer, now: clock.wallMilliseconds())
    }

    public func handshakeRefused(peer: PeerHandle) {
        watchdog.handshakeRefused(peer, now: clock.wallMilliseconds())
    }
}
