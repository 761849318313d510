import Core
import Control
import WireGuard

/// The engine as the watchdog's device: refusal, session end (keys dropped), byte counts, and
/// runtime tier changes for policy.
extension GatewayEngine: WatchdogDevice {
    public func setRefused(_ peer: PeerHandle, _ refused: Bool) { device.setRefused(peer, refused) }

    public func endSession(_ peer: PeerHandle) { kick(peer) }

    public func byteCounts(_ peer: PeerHandle) -> (rx: UInt64, tx: UInt64) {
        let s = device.status(of: peer)
        return (s?.rxBytes ?? 0, s?.txBytes ?? 0)
    }

    /// Changes a peer's tier for policy (`tier free|premium` rules) without a restart.
    public func setTier(_ peer: PeerHandle, _ tier: PeerTier) {
        let changed = peerTable.withLock { table -> Bool in
            guard table[peer.rawValue] != nil, table[peer.rawValue]!.tier != tier else { return false }
            table[peer.rawValue]!.tier = tier
            return true
        }
        if changed { restampPolicy() }
    }
}
