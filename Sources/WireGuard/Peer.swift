// A configured peer: identity plus mutex-guarded state and atomic counters.
import Core
import Synchronization

/// One peer of a device. Its identity never changes; everything else is in `state` (one mutex per
/// peer) except the byte counters, which are atomics so the data path updates them lock-free.
final class Peer: Sendable {
    let handle: PeerHandle
    let publicKey: PublicKey
    let state: Mutex<PeerState>
    /// Transport bytes received (authenticated datagram length) and sent.
    let rxBytes = Atomic<UInt64>(0)
    let txBytes = Atomic<UInt64>(0)
    /// Transport packets received (keepalives included) and sent, for metrics.
    let rxPackets = Atomic<UInt64>(0)
    let txPackets = Atomic<UInt64>(0)

    init(handle: PeerHandle, publicKey: PublicKey, state: sending PeerState) {
        self.handle = handle
        self.publicKey = publicKey
        self.state = Mutex(state)
    }
}
