import Engine
import Core
import WireGuard

/// What the watchdog does to peers: implemented by the gateway engine (`GatewayEngine+Watchdog`)
/// and by fakes in tests.
public protocol WatchdogDevice: AnyObject, Sendable {
    /// Refuses (or stops refusing) the peer's handshakes.
    func setRefused(_ peer: PeerHandle, _ refused: Bool)
    /// Ends the peer's live session at once: keys dropped, queued packets discarded.
    func endSession(_ peer: PeerHandle)
    /// Bytes received from / sent to the peer since it was added.
    func byteCounts(_ peer: PeerHandle) -> (rx: UInt64, tx: UInt64)
}

/// Where the watchdog's records go (the daemon's `History`, or a capture in tests).
public protocol WatchdogSink: AnyObject, Sendable {
    /// Queues one store record; never blocks.
    func record(_ record: WatchdogRecord)
    /// Queues a record about a peer with the tier in force when the watchdog decided it, so the
    /// events reporting the decision say that tier and not one read later (the store rows do not
    /// carry it; by default the same as ``record(_:)``).
    func record(_ record: WatchdogRecord, tier: PeerTier)
}

extension WatchdogSink {
    public func record(_ record: WatchdogRecord, tier: PeerTier) { self.record(record) }
}
