// Peers by handle and by public key.
import Core

/// The device's peers, guarded by the device's `peers` mutex.
struct PeerTable {
    var byHandle: [PeerHandle: Peer] = [:]
    var byKey: [PublicKey: PeerHandle] = [:]
    var nextHandle: UInt32 = 1
}
