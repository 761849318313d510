// Responder side of the cookie mechanism (whitepaper §5.4.7).
import Core

/// Verifies mac1/mac2 on handshake messages sent to us and builds cookie replies under load.
/// The secret rotates every COOKIE_REFRESH_TIME (2 minutes). Guarded by the device's mutex.
struct CookieChecker {
    /// `HASH(LABEL_MAC1 ‖ our public key)`.
    let mac1Key: [UInt8]
    /// `HASH(LABEL_COOKIE ‖ our public key)`.
    let cookieKey: [UInt8]
    /// The random secret `R_m`, or nil before the first cookie.
    private var secret: SecretBuffer?
    private var secretSetAt: UInt64 = 0
    private var scratch: [UInt8] = []

    init(publicKey: [UInt8]) {
        mac1Key = MACs.mac1Key(publicKey)
        cookieKey = MACs.cookieKey(publicKey)
        scratch.reserveCapacity(18)
    }

    /// The cookie for `source` with the current secret: `MAC(R_m, source address ‖ port)`.
    private mutating func cookie(for source: Endpoint) -> [UInt8] {
        source.writeCookieBytes(into: &scratch)
        return Blake2s.mac16(key: secret!.read(0, 32), scratch)
    }

    /// True when `msg` carries a valid mac2 for `source` (only possible with a fresh secret).
    mutating func checkMAC2(_ msg: [UInt8], source: Endpoint, now: UInt64) -> Bool {
        guard secret != nil, now &- secretSetAt <= WireGuardProtocol.cookieRefreshTime else { return false }
        return MACs.checkMAC2(msg, cookie: cookie(for: source))
    }

    /// A 64-byte cookie reply to `msg` (an initiation or response whose sender index is `senderIndex`).
    mutating func makeReply(to msg: [UInt8], senderIndex: UInt32, source: Endpoint, now: UInt64,
                            random: any RandomSource) -> [UInt8]
    {
        if secret == nil || now &- secretSetAt > WireGuardProtocol.cookieRefreshTime {
            secret = SecretBuffer.copy(of: random.bytes(32))
            secretSetAt = now
        }
        let tau = cookie(for: source)
        let nonce = random.bytes(24)
        let mac1 = Array(msg[(msg.count - 32)..<(msg.count - 16)])
        let sealed = AEAD.xseal(key: cookieKey, nonce: nonce, plaintext: tau, ad: mac1)
        var reply = [UInt8](repeating: 0, count: MessageLayout.CookieReply.size)
        reply[0] = UInt8(MessageType.cookieReply.rawValue)
        reply.setLE32(MessageLayout.CookieReply.receiver, senderIndex)
        reply.replaceSubrange(8..<32, with: nonce)
        reply.replaceSubrange(32..<64, with: sealed)
        return reply
    }
}
