import Engine
import Core
import Config
import WireGuard

/// The engine as the watchdog's device: refusal, session end (keys dropped), byte counts.
extension GatewayEngine: WatchdogDevice {
    public func setRefused(_ peer: PeerHandle, _ refused: Bool) { device.setRefused(peer, refused) }

    public func endSession(_ peer: PeerHandle) { kick(peer) }

    public func byteCounts(_ peer: PeerHandle) -> (rx: UInt64, tx: UInt64) {
        let s = device.status(of: peer)
        return (s?.rxBytes ?? 0, s?.txBytes ?? 0)
    }

}
