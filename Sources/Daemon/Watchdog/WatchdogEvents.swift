import Core
import Engine
import Runtime
import Synchronization

/// The watchdog's records as operator events (`DaemonEvent`), on the way to
/// the store: session start and end (with the reason), window end, and the first refusal of each
/// pause (or of a disabled or expired peer); later refusals are only counted. Called under the
/// watchdog's lock like any sink: it logs (one write) and forwards, nothing else.
public final class WatchdogEvents: WatchdogSink {
    let inner: any WatchdogSink
    let log: Logger
    let peers: PeerRegistry
    /// Per peer: the latest window (for `window-end`'s reconnect time) and which refusal was
    /// logged last (a window end, or `restricted:<reason>`), reset when a session opens.
    private let state = Mutex<(windows: [String: WindowDates], refusalLogged: [String: String])>(([:], [:]))

    /// Events of the records going to `inner`; tiers read from `peers` (the tier in force).
    public init(_ inner: any WatchdogSink, log: Logger, peers: PeerRegistry) {
        self.inner = inner
        self.log = log
        self.peers = peers
    }

    public func record(_ record: WatchdogRecord) {
        if let e = event(record, tier: nil) { log.event(e) }
        inner.record(record)
    }

    public func record(_ record: WatchdogRecord, tier: PeerTier) {
        if let e = event(record, tier: tier) { log.event(e) }
        inner.record(record, tier: tier)
    }

    /// The event a record is, if any (and the bookkeeping that makes refusals once per pause).
    /// `decided`: the tier in force when the watchdog decided (nil: read from the registry now).
    func event(_ record: WatchdogRecord, tier decided: PeerTier? = nil) -> DaemonEvent? {
        let tier = { (peer: String) in decided ?? self.peers.current.named(peer)?.tier ?? .free }
        switch record {
        case let .windowPut(peer, w, _, _):
            state.withLock { $0.windows[peer] = w }
            return nil
        case let .sessionOpened(peer, _):
            state.withLock { $0.refusalLogged[peer] = nil }
            return .sessionStart(peer: peer, tier: tier(peer))
        case let .sessionClosed(peer, _, reason, _, _):
            if reason == .freeLimit || reason == .quota {
                // The window's own end: its tier and what ended it (time or quota).
                let w = state.withLock { $0.windows[peer] }
                log.event(.sessionEnd(peer: peer, tier: tier(peer), reason: reason))
                return .windowEnd(peer: peer, tier: tier(peer), reason: reason, reconnectAtMs: w?.reconnectAt)
            }
            return .sessionEnd(peer: peer, tier: tier(peer), reason: reason)
        case let .refused(peer, windowEnd, _, why):
            let key = "window:\(windowEnd)"
            let first = state.withLock { s in
                defer { s.refusalLogged[peer] = key }
                return s.refusalLogged[peer] != key
            }
            return first ? .refusal(peer: peer, tier: tier(peer), reason: why.eventReason) : nil
        case let .restricted(peer, reason, _):
            let key = "restricted:\(reason)"
            let first = state.withLock { s in
                defer { s.refusalLogged[peer] = key }
                return s.refusalLogged[peer] != key
            }
            return first ? .refusal(peer: peer, tier: tier(peer), reason: reason) : nil
        case .windowDeleted, .marker:
            return nil
        }
    }
}
