// The four WireGuard message types.
import Core

/// Message types (the first byte; the next three are reserved zeros, so the first four bytes read
/// as a little-endian 32-bit type, as wireguard-go and the kernel read them).
public enum MessageType: UInt32, Sendable {
    case initiation = 1
    case response = 2
    case cookieReply = 3
    case transport = 4
}
