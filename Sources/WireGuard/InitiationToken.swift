import Core
import Synchronization

/// An authenticated handshake initiation the device has not answered yet (boringtun's shape: the
/// device checks a message and returns a value; the caller decides; the device acts on it).
/// `WireGuardDevice.receive(..., deferInitiations: true)` makes one once mac1, the peer's static
/// key, its timestamp and the flood limit passed; ``WireGuardDevice/respond(to:now:output:)``
/// answers it once. Dropping it refuses the initiation: nothing was built or changed, and the
/// secrets it holds are wiped when it goes.
public final class InitiationToken: Equatable, @unchecked Sendable {
    // Safe: `consumed` is behind a Mutex; the other properties are immutable.
    let peer: Peer
    /// The peer that sent it.
    public var peerHandle: PeerHandle { peer.handle }
    /// Where it came from (the peer's endpoint once answered).
    public let source: Endpoint
    /// True when the device refused the peer (`setRefused`) when it arrived.
    public let refused: Bool
    let length: Int
    private let consumed: Mutex<Noise.ConsumedInitiation?>

    init(peer: Peer, consumed: Noise.ConsumedInitiation, source: Endpoint, length: Int, refused: Bool) {
        self.peer = peer
        self.source = source
        self.length = length
        self.refused = refused
        self.consumed = Mutex(consumed)
    }

    /// The handshake state, once (nil after the first call).
    func take() -> Noise.ConsumedInitiation? { consumed.withLock { c in defer { c = nil }; return c } }

    deinit { consumed.withLock { c in c?.state.wipe() } }

    public static func == (a: InitiationToken, b: InitiationToken) -> Bool { a === b }
}
