// mac1 / mac2 computation and the cookie reply encryption (whitepaper §5.4.4, §5.4.7).
import Core

/// mac1 and mac2 over handshake messages, and the keys derived from a static public key.
public enum MACs {
    /// `HASH(LABEL_MAC1 ‖ publicKey)`: the key of mac1 on messages sent to `publicKey`'s owner.
    public static func mac1Key(_ publicKey: [UInt8]) -> [UInt8] {
        Blake2s.hash(WireGuardProtocol.labelMAC1, publicKey)
    }

    /// `HASH(LABEL_COOKIE ‖ publicKey)`: the key cookie replies from `publicKey`'s owner are sealed with.
    public static func cookieKey(_ publicKey: [UInt8]) -> [UInt8] {
        Blake2s.hash(WireGuardProtocol.labelCookie, publicKey)
    }

    /// Offset of mac1 in a handshake message of `size` bytes (mac1 and mac2 are the last 32 bytes).
    static func mac1Offset(_ size: Int) -> Int { size - 32 }

    /// Writes mac1 into `msg` (an initiation or response): `MAC(mac1Key, msg[..<mac1])`.
    public static func writeMAC1(_ msg: inout [UInt8], key: [UInt8]) {
        let off = mac1Offset(msg.count)
        let mac = Blake2s.mac16(key: key, Array(msg[..<off]))
        msg.replaceSubrange(off..<off + 16, with: mac)
    }

    /// Writes mac2 into `msg`: `MAC(cookie, msg[..<mac2])`.
    public static func writeMAC2(_ msg: inout [UInt8], cookie: [UInt8]) {
        let off = mac1Offset(msg.count) + 16
        let mac = Blake2s.mac16(key: cookie, Array(msg[..<off]))
        msg.replaceSubrange(off..<off + 16, with: mac)
    }

    /// True when `msg`'s mac1 verifies under `key` (constant-time compare).
    public static func checkMAC1(_ msg: [UInt8], key: [UInt8]) -> Bool {
        let off = mac1Offset(msg.count)
        let mac = Blake2s.mac16(key: key, Array(msg[..<off]))
        return mac.withUnsafeBytes { a in msg.withUnsafeBytes { Sodium.equal(a.baseAddress!, $0.baseAddress! + off, 16) } }
    }

    /// True when `msg`'s mac2 verifies under `cookie` (constant-time compare).
    public static func checkMAC2(_ msg: [UInt8], cookie: [UInt8]) -> Bool {
        let off = mac1Offset(msg.count) + 16
        let mac = Blake2s.mac16(key: cookie, Array(msg[..<off]))
        return mac.withUnsafeBytes { a in msg.withUnsafeBytes { Sodium.equal(a.baseAddress!, $0.baseAddress! + off, 16) } }
    }
}
