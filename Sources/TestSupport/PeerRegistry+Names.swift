import Core
import Engine
import WireGuard

extension PeerRegistry {
    /// A registry of free peers with these names by raw handle and made-up keys (each handle's
    /// byte repeated), for tests that need names only.
    public static func names(_ byHandle: [UInt32: String]) -> PeerRegistry {
        PeerRegistry(byHandle.map { handle, name in
            GatewayPeer(handle: PeerHandle(rawValue: handle), name: name,
                        publicKey: PublicKey([UInt8](repeating: UInt8(truncatingIfNeeded: handle), count: 32))!, tier: .free)
        })
    }
}
