// One session's transport keys, send counter and replay window.
import Core
import Synchronization

/// The result of a completed handshake (whitepaper §5.4.5): a sending key, a receiving key, the send
/// counter, the receive replay window, and the indices that name the session on the wire.
///
/// Keys are written once in the initialiser and zeroed when the last reference goes away (a peer's
/// current/previous/next slots and the index table hold references; an in-flight encrypt or
/// decrypt holds one for its duration, so keys outlive no operation and no operation outlives keys).
final class Keypair: Sendable {
    /// Bytes 0..<32: sending key; 32..<64: receiving key.
    let keys: SecretBuffer
    /// Next counter to send.
    let sendCounter = Atomic<UInt64>(0)
    /// Counters received so far.
    let replay: Mutex<ReplayWindow>
    /// Monotonic time of creation (nanoseconds).
    let created: UInt64
    /// True when we initiated the handshake (only the initiator rekeys on age).
    let isInitiator: Bool
    /// Our index: the receiver index of transport messages we accept with this keypair.
    let localIndex: UInt32
    /// The peer's index: the receiver index we put on transport messages we send.
    let remoteIndex: UInt32

    init(send: [UInt8], receive: [UInt8], created: UInt64, isInitiator: Bool, localIndex: UInt32,
         remoteIndex: UInt32)
    {
        keys = SecretBuffer.zeroed(count: 64)
        keys.write(send, at: 0)
        keys.write(receive, at: 32)
        replay = Mutex(ReplayWindow())
        self.created = created
        self.isInitiator = isInitiator
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
    }

    @inline(__always) var sendKey: UnsafeRawPointer { UnsafeRawPointer(keys.base) }
    @inline(__always) var receiveKey: UnsafeRawPointer { UnsafeRawPointer(keys.base + 32) }

    /// True when the keypair may no longer be used at `now` (REJECT_AFTER_TIME).
    @inline(__always) func isExpired(_ now: UInt64) -> Bool {
        now &- created >= WireGuardProtocol.rejectAfterTime
    }
}
