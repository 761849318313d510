// The cheap first look at a handshake message: which ones count toward "under load".
import Core

/// Decides, without state and without allocating, whether a datagram is a handshake message that
/// counts toward the responder's load (whitepaper §5.3, "Under Load: Cookie Reply Message").
///
/// Only work a responder would really do counts: an initiation (148 bytes) or a response
/// (92 bytes) whose type field reads exactly 1 or 2 (the three reserved bytes zero) and whose mac1
/// verifies under `HASH(LABEL_MAC1 ‖ our public key)`. Anything else — a 1-byte datagram starting
/// with 1, a message of the wrong length, a wrong mac1, a cookie reply (it carries no mac1 and
/// costs one table lookup) — is dropped by `WireGuardDevice.receive` before any Diffie–Hellman and
/// must not switch the gateway into cookie mode, or a trickle of junk would slow every handshake.
public enum HandshakeScreen {
    /// The handshake message type a datagram claims by its type field and length alone, or nil
    /// (transport data, unknown type, wrong length for its type). No crypto.
    public static func messageType(_ datagram: UnsafeRawBufferPointer) -> MessageType? {
        guard datagram.count >= 4, let base = datagram.baseAddress else { return nil }
        switch MessageLayout.readLE32(base, 0) {
        case MessageType.initiation.rawValue where datagram.count == MessageLayout.Initiation.size: return .initiation
        case MessageType.response.rawValue where datagram.count == MessageLayout.Response.size: return .response
        case MessageType.cookieReply.rawValue where datagram.count == MessageLayout.CookieReply.size: return .cookieReply
        default: return nil
        }
    }

    /// True when `datagram` is an initiation or response of the right length whose mac1 verifies
    /// under `mac1Key` (`MACs.mac1Key(our public key)`, 32 bytes). Constant-time compare; no allocation.
    public static func countsTowardLoad(_ datagram: UnsafeRawBufferPointer, mac1Key: UnsafeRawBufferPointer) -> Bool {
        guard let type = messageType(datagram), type != .cookieReply, mac1Key.count == 32,
            let base = datagram.baseAddress
        else { return false }
        let off = MACs.mac1Offset(datagram.count)
        // 16 bytes on the stack for the computed mac1.
        return withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { mac in
            Blake2s.mac16(key: mac1Key, UnsafeRawBufferPointer(start: base, count: off), into: mac.baseAddress!)
            return Sodium.equal(UnsafeRawPointer(mac.baseAddress!), base + off, 16)
        }
    }
}

extension WireGuardDevice {
    /// True when `datagram` counts toward this device's handshake load: see
    /// ``HandshakeScreen/countsTowardLoad(_:mac1Key:)`` (mac1 over our own public key).
    public func countsTowardLoad(_ datagram: UnsafeRawBufferPointer) -> Bool {
        mac1Key.withUnsafeBytes { HandshakeScreen.countsTowardLoad(datagram, mac1Key: $0) }
    }
}
