import COpenSSL
import CSodium
import Core
/// Reads the ClientHello that a QUIC client sends in its Initial packets (RFC 9000 §17.2.2,
/// RFC 9001 §5, RFC 9369 for v2), so a UDP flow's server name is known like a TLS flow's:
///
/// 1. the long header gives the version, the Destination Connection ID and the Length;
/// 2. the client's Initial keys come from the DCID: HKDF-Extract with the version's salt, then
///    HKDF-Expand-Label "client in", then "quic key"/"quic iv"/"quic hp" (v2: "quicv2 …");
/// 3. header protection is removed with AES-128-ECB over the 16-byte sample (§5.4);
/// 4. the payload is decrypted and authenticated with AES-128-GCM, the header as AAD (§5.3);
/// 5. CRYPTO frames go into the flow's `FirstFlightBuffer` at their offsets (in any order, over
///    several packets and coalesced packets), which `TLSClientHello` reads.
///
/// All cryptography is vetted libraries': OpenSSL libcrypto for AES-128-ECB and AES-128-GCM,
/// libsodium's HMAC-SHA256 (`crypto_auth_hmacsha256_*`, its state on our side) for HKDF's two
/// steps. The cipher contexts and every buffer are created once in `init`; nothing is allocated
/// per packet, neither for a connection whose keys are known nor for deriving a new DCID's keys
/// (OpenSSL's `EVP_MAC_init` allocated 5 times per HMAC key, 25 per new connection).
///
/// What it cannot see: the packet number is taken as sent (the client's first Initials carry
/// small numbers, so truncation does not matter); Initials sent after the server chose a new
/// connection ID are still protected with the first DCID's keys, so only the DCID's own
/// packets decrypt; with ECH the name is the outer (public) one, as for TLS over TCP.
///
/// Not thread-safe: one per data-path thread.
public final class QUICInitialReader {
    /// Client Initial keys for one DCID and version.
    struct Keys {
        var key = (UInt64(0), UInt64(0))
        var iv = (UInt64(0), UInt32(0))
        var hp = (UInt64(0), UInt64(0))
    }

    private static let cacheSize = 16
    private static let scratchSize = 65536

    private let ecb: OpaquePointer?
    private let gcm: OpaquePointer?
    /// HMAC-SHA256's state (libsodium), keyed afresh for each HKDF step (RFC 5869 is two HMAC
    /// uses); preallocated, so a new connection's key derivation allocates nothing.
    private let mac: UnsafeMutablePointer<crypto_auth_hmacsha256_state>
    private let scratch: UnsafeMutableRawPointer
    private let work: UnsafeMutableRawPointer  // salts, PRKs, labels, sample, mask
    private var cacheDCID: UnsafeMutablePointer<UInt8>  // cacheSize × 21 (length, bytes)
    private var cacheVersion: [QUICVersion?]
    private var cacheKeys: UnsafeMutablePointer<Keys>
    private var cacheNext = 0
    /// Key derivations done (new DCIDs), since creation.
    public private(set) var derivations = 0
    /// True when libcrypto set up every context; otherwise every read fails with `.cryptoUnavailable`.
    public let isReady: Bool

    /// A reader with its libcrypto contexts (AES-128-ECB, AES-128-GCM, HMAC-SHA256) set up; check
    /// `isReady`.
    public init() {
        ecb = EVP_CIPHER_CTX_new()
        gcm = EVP_CIPHER_CTX_new()
        let ecbCipher = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil)
        let gcmCipher = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)
        mac = .allocate(capacity: 1)
        var ready = sodium_init() >= 0 && ecb != nil && gcm != nil && ecbCipher != nil && gcmCipher != nil
        let zero = [UInt8](repeating: 0, count: 16)
        if ready {
            ready = EVP_EncryptInit_ex2(ecb, ecbCipher, zero, nil, nil) == 1 && EVP_CIPHER_CTX_set_padding(ecb, 0) == 1
                && EVP_DecryptInit_ex2(gcm, gcmCipher, zero, zero, nil) == 1
        }
        // The contexts keep their own references to the ciphers and the MAC.
        EVP_CIPHER_free(ecbCipher)
        EVP_CIPHER_free(gcmCipher)
        isReady = ready
        scratch = .allocate(byteCount: QUICInitialReader.scratchSize, alignment: 16)
        work = .allocate(byteCount: 512, alignment: 16)
        for (k, v) in QUICVersion.allCases.enumerated() {
            let salt = v.initialSalt
            (work + k * 20).copyMemory(from: salt, byteCount: 20)
        }
        cacheDCID = .allocate(capacity: QUICInitialReader.cacheSize * 21)
        cacheDCID.initialize(repeating: 0xFF, count: QUICInitialReader.cacheSize * 21)
        cacheVersion = [QUICVersion?](repeating: nil, count: QUICInitialReader.cacheSize)
        cacheKeys = .allocate(capacity: QUICInitialReader.cacheSize)
        cacheKeys.initialize(repeating: Keys(), count: QUICInitialReader.cacheSize)
    }

    deinit {
        EVP_CIPHER_CTX_free(ecb)
        EVP_CIPHER_CTX_free(gcm)
        sodium_memzero(mac, MemoryLayout<crypto_auth_hmacsha256_state>.size)
        mac.deallocate()
        scratch.deallocate()
        work.deallocate()
        cacheDCID.deallocate()
        cacheKeys.deallocate()
    }

    // Offsets in `work`.
    private static let saltAt = 0  // 2 × 20
    private static let prkAt = 64  // 32: initial secret, then 32: client secret
    private static let infoAt = 160  // 64: HkdfLabel
    private static let maskAt = 240  // 16
    private static let keysAt = 256  // 16 + 12 + 16 (derive output)
    private static let expandAt = 320  // 32: one HKDF-Expand block

    /// Reads the client Initial packets in one UDP datagram (from the client towards port 443,
    /// usually) and adds their CRYPTO data to `crypto`, the flow's buffer (reset it, offset-based,
    /// when the flow starts). The datagram itself is not modified.
    public func read(datagram d: UnsafeRawBufferPointer, into crypto: FirstFlightBuffer) -> QUICInitialOutcome {
        let n = d.count
        var at = 0
        var decrypted = 0
        var firstFailure: QUICFailure?
        var sawLongHeader = false
        while at < n {
            let packetStart = at
            let b0 = d[at]
            guard b0 & 0x80 != 0 else { break }  // a short header runs to the end of the datagram
            guard at + 6 <= n else { firstFailure = firstFailure ?? .truncated; break }
            let versionValue = d.be32(at + 1)
            if versionValue == 0 { break }  // Version Negotiation
            guard let version = QUICVersion(rawValue: versionValue) else {
                if !sawLongHeader && decrypted == 0 { return .unsupportedVersion(versionValue) }
                break
            }
            sawLongHeader = true
            let type = (b0 >> 4) & 3
            let isInitial = type == version.initialType
            // Retry (v1 type 3, v2 type 0) has no Length: nothing after it can be read.
            if type == (version == .v1 ? 3 : 0) { break }
            var i = at + 5
            let dcidLength = Int(d[i])
            guard dcidLength <= 20 else { firstFailure = firstFailure ?? .badConnectionID; break }
            let dcidAt = i + 1
            i = dcidAt + dcidLength
            guard i < n else { firstFailure = firstFailure ?? .truncated; break }
            let scidLength = Int(d[i])
            guard scidLength <= 20 else { firstFailure = firstFailure ?? .badConnectionID; break }
            i += 1 + scidLength
            if isInitial {
                guard let token = QUICInitialReader.varint(d, &i), token <= UInt64(n - i) else {
                    firstFailure = firstFailure ?? .truncated
                    break
                }
                i += Int(token)
            }
            guard let length = QUICInitialReader.varint(d, &i) else { firstFailure = firstFailure ?? .truncated; break }
            let pnAt = i
            guard length <= UInt64(n - pnAt) else { firstFailure = firstFailure ?? .badLength; break }
            let end = pnAt + Int(length)
            at = end
            guard isInitial else { continue }  // 0-RTT / Handshake coalesced after it: skip
            guard length >= 20 else { firstFailure = firstFailure ?? .badLength; continue }  // room for the sample (RFC 9001 §5.4.2)
            guard isReady else { return .failed(.cryptoUnavailable) }
            let keys = keysFor(version, UnsafeRawBufferPointer(rebasing: d[dcidAt..<(dcidAt + dcidLength)]))
            guard let keys else { return .failed(.cryptoUnavailable) }
            switch decrypt(d, start: packetStart, pnAt: pnAt, end: end, keys: keys) {
            case .failure(let f): firstFailure = firstFailure ?? f
            case .success(let payload):
                if let f = frames(payload, into: crypto) { firstFailure = firstFailure ?? f } else { decrypted += 1 }
            }
        }
        if decrypted > 0 { return .clientHello(TLSClientHello.serverName(inHandshake: crypto.contiguous)) }
        if let firstFailure { return .failed(firstFailure) }
        return .notInitial
    }

    private enum Decrypted {
        case success(UnsafeRawBufferPointer)
        case failure(QUICFailure)
    }

    /// Removes header protection and decrypts the packet `start ..< end` whose packet number
    /// starts at `pnAt`, into `scratch` (AAD first, then the plaintext).
    private func decrypt(_ d: UnsafeRawBufferPointer, start: Int, pnAt: Int, end: Int, keys: Keys) -> Decrypted {
        // Sample: 16 bytes starting 4 bytes after the packet number's start (RFC 9001 §5.4.2).
        let sampleAt = pnAt + 4
        var k = keys
        let mask = work + QUICInitialReader.maskAt
        var outLength: Int32 = 0
        let ok = withUnsafeBytes(of: &k.hp) { hp in
            EVP_EncryptInit_ex2(ecb, nil, hp.baseAddress!.assumingMemoryBound(to: UInt8.self), nil, nil) == 1
                && EVP_EncryptUpdate(ecb, mask.assumingMemoryBound(to: UInt8.self), &outLength,
                                     d.baseAddress!.advanced(by: sampleAt).assumingMemoryBound(to: UInt8.self), 16) == 1
        }
        guard ok, outLength == 16 else { return .failure(.cryptoUnavailable) }
        let m = mask.assumingMemoryBound(to: UInt8.self)
        let first = d[start] ^ (m[0] & 0x0F)
        let pnLength = Int(first & 3) + 1
        let aadLength = pnAt + pnLength - start
        let payloadAt = pnAt + pnLength
        let cipherLength = end - payloadAt - 16
        guard cipherLength > 0, aadLength + cipherLength <= QUICInitialReader.scratchSize else { return .failure(.badLength) }
        // The unprotected header is the AAD.
        let aad = scratch.assumingMemoryBound(to: UInt8.self)
        (scratch).copyMemory(from: d.baseAddress! + start, byteCount: aadLength)
        aad[0] = first
        var pn: UInt64 = 0
        for j in 0..<pnLength {
            aad[pnAt - start + j] ^= m[1 + j]
            pn = pn << 8 | UInt64(aad[pnAt - start + j])
        }
        // Nonce: the IV with the packet number XORed into its last 8 bytes (RFC 9001 §5.3).
        var nonce = k.iv
        nonce.1 ^= UInt32(truncatingIfNeeded: pn).bigEndian
        let plain = aad + aadLength
        var written: Int32 = 0
        let tag = UnsafeMutableRawPointer(mutating: d.baseAddress! + (end - 16))
        let good = withUnsafeBytes(of: &k.key) { key in
            withUnsafeBytes(of: &nonce) { iv in
                EVP_DecryptInit_ex2(gcm, nil, key.baseAddress!.assumingMemoryBound(to: UInt8.self), iv.baseAddress!.assumingMemoryBound(to: UInt8.self), nil) == 1
                    && EVP_DecryptUpdate(gcm, nil, &written, aad, Int32(aadLength)) == 1
                    && EVP_DecryptUpdate(gcm, plain, &written, d.baseAddress!.advanced(by: payloadAt).assumingMemoryBound(to: UInt8.self), Int32(cipherLength)) == 1
                    && EVP_CIPHER_CTX_ctrl(gcm, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1
            }
        }
        guard good else { return .failure(.decryptionFailed) }
        var finalLength: Int32 = 0
        guard EVP_DecryptFinal_ex(gcm, plain + Int(written), &finalLength) == 1 else { return .failure(.decryptionFailed) }
        return .success(UnsafeRawBufferPointer(start: plain, count: Int(written + finalLength)))
    }

    /// Walks the frames of a decrypted Initial payload, putting CRYPTO data into `crypto`.
    private func frames(_ p: UnsafeRawBufferPointer, into crypto: FirstFlightBuffer) -> QUICFailure? {
        var i = 0
        let n = p.count
        while i < n {
            guard let type = QUICInitialReader.varint(p, &i) else { return .badFrame }
            switch type {
            case 0x00, 0x01: continue  // PADDING, PING
            case 0x02, 0x03:  // ACK (RFC 9000 §19.3)
                guard QUICInitialReader.varint(p, &i) != nil, QUICInitialReader.varint(p, &i) != nil,
                      let ranges = QUICInitialReader.varint(p, &i), QUICInitialReader.varint(p, &i) != nil, ranges <= UInt64(n)
                else { return .badFrame }
                for _ in 0..<(Int(ranges) * 2 + (type == 0x03 ? 3 : 0)) {
                    guard QUICInitialReader.varint(p, &i) != nil else { return .badFrame }
                }
            case 0x06:  // CRYPTO (§19.6)
                guard let offset = QUICInitialReader.varint(p, &i), let length = QUICInitialReader.varint(p, &i),
                      length <= UInt64(n - i)
                else { return .badFrame }
                let data = UnsafeRawBufferPointer(rebasing: p[i..<(i + Int(length))])
                i += Int(length)
                if offset < UInt64(Int32.max) { crypto.insert(offset: Int(offset), data) }
            case 0x1C:  // CONNECTION_CLOSE (§19.19): the rest is the reason
                return nil
            default:
                return .badFrame
            }
        }
        return nil
    }

    /// A variable-length integer (RFC 9000 §16) at `i`, moving `i` past it; nil when cut short.
    static func varint(_ p: UnsafeRawBufferPointer, _ i: inout Int) -> UInt64? {
        guard i < p.count else { return nil }
        let length = 1 << Int(p[i] >> 6)
        guard i + length <= p.count else { return nil }
        var v = UInt64(p[i] & 0x3F)
        for j in 1..<length { v = v << 8 | UInt64(p[i + j]) }
        i += length
        return v
    }

    // MARK: - Keys

    /// The client Initial keys for `dcid`: from the cache, else derived (and cached).
    private func keysFor(_ version: QUICVersion, _ dcid: UnsafeRawBufferPointer) -> Keys? {
        for c in 0..<QUICInitialReader.cacheSize where cacheVersion[c] == version {
            let entry = cacheDCID + c * 21
            guard Int(entry[0]) == dcid.count else { continue }
            var same = true
            for j in 0..<dcid.count where entry[1 + j] != dcid[j] { same = false; break }
            if same { return cacheKeys[c] }
        }
        guard let keys = derive(version, dcid) else { return nil }
        let c = cacheNext
        cacheNext = (cacheNext + 1) % QUICInitialReader.cacheSize
        let entry = cacheDCID + c * 21
        entry[0] = UInt8(dcid.count)
        for j in 0..<dcid.count { entry[1 + j] = dcid[j] }
        cacheVersion[c] = version
        cacheKeys[c] = keys
        derivations += 1
        return keys
    }

    /// RFC 9001 §5.2 (RFC 9369 §3.3): the client's Initial key, IV and header-protection key.
    func derive(_ version: QUICVersion, _ dcid: UnsafeRawBufferPointer) -> Keys? {
        let salt = work + (version == .v1 ? 0 : 20)
        let initialSecret = work + QUICInitialReader.prkAt
        let clientSecret = work + QUICInitialReader.prkAt + 32
        let out = work + QUICInitialReader.keysAt
        guard extract(salt: UnsafeRawBufferPointer(start: salt, count: 20), ikm: dcid, into: initialSecret),
              expandLabel(initialSecret, "client in", length: 32, into: clientSecret)
        else { return nil }
        let labels = version.labels
        guard expandLabel(clientSecret, labels.key, length: 16, into: out),
              expandLabel(clientSecret, labels.iv, length: 12, into: out + 16),
              expandLabel(clientSecret, labels.hp, length: 16, into: out + 28)
        else { return nil }
        var k = Keys()
        withUnsafeMutableBytes(of: &k.key) { $0.copyMemory(from: UnsafeRawBufferPointer(start: out, count: 16)) }
        withUnsafeMutableBytes(of: &k.iv) { $0.copyMemory(from: UnsafeRawBufferPointer(start: out + 16, count: 12)) }
        withUnsafeMutableBytes(of: &k.hp) { $0.copyMemory(from: UnsafeRawBufferPointer(start: out + 28, count: 16)) }
        return k
    }

    /// The key, IV and header-protection key derived for `dcid` (tests compare them with the
    /// RFC's Appendix A.1).
    func derivedKeyBytes(_ version: QUICVersion, dcid: [UInt8]) -> (key: [UInt8], iv: [UInt8], hp: [UInt8])? {
        guard var k = dcid.withUnsafeBytes({ derive(version, $0) }) else { return nil }
        let key = withUnsafeBytes(of: &k.key) { Array($0) }
        let iv = withUnsafeBytes(of: &k.iv) { Array($0.prefix(12)) }
        let hp = withUnsafeBytes(of: &k.hp) { Array($0) }
        return (key, iv, hp)
    }

    /// HMAC-SHA256(key, a ‖ b) into `out` (32 bytes), with the one preallocated state.
    private func hmac(key: UnsafeRawPointer, _ keyLength: Int, _ a: UnsafeRawPointer, _ aLength: Int,
                      _ b: UnsafeRawPointer?, _ bLength: Int, into out: UnsafeMutableRawPointer) -> Bool
    {
        crypto_auth_hmacsha256_init(mac, key.assumingMemoryBound(to: UInt8.self), keyLength) == 0
            && crypto_auth_hmacsha256_update(mac, a.assumingMemoryBound(to: UInt8.self), UInt64(aLength)) == 0
            && (b == nil || crypto_auth_hmacsha256_update(mac, b!.assumingMemoryBound(to: UInt8.self), UInt64(bLength)) == 0)
            && crypto_auth_hmacsha256_final(mac, out.assumingMemoryBound(to: UInt8.self)) == 0
    }

    /// HKDF-Extract (RFC 5869 §2.2): HMAC-SHA256(salt, IKM), 32 bytes.
    private func extract(salt: UnsafeRawBufferPointer, ikm: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) -> Bool {
        hmac(key: salt.baseAddress!, salt.count, ikm.baseAddress ?? UnsafeRawPointer(work), ikm.count, nil, 0, into: out)
    }

    /// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context, for outputs of at most 32 bytes
    /// (one HMAC block: every QUIC Initial secret and key).
    private func expandLabel(_ secret: UnsafeMutableRawPointer, _ label: StaticString, length: Int, into out: UnsafeMutableRawPointer) -> Bool {
        // struct { uint16 length; opaque label<7..255> = "tls13 " + label; opaque context<0..255>; }
        let info = (work + QUICInitialReader.infoAt).assumingMemoryBound(to: UInt8.self)
        info[0] = UInt8(length >> 8)
        info[1] = UInt8(length & 0xFF)
        let prefix: StaticString = "tls13 "
        info[2] = UInt8(prefix.utf8CodeUnitCount + label.utf8CodeUnitCount)
        var j = 3
        for k in 0..<prefix.utf8CodeUnitCount { info[j] = prefix.utf8Start[k]; j += 1 }
        for k in 0..<label.utf8CodeUnitCount { info[j] = label.utf8Start[k]; j += 1 }
        info[j] = 0
        j += 1
        // HKDF-Expand (RFC 5869 §2.3) of at most one hash length: T(1) = HMAC(PRK, info ‖ 0x01).
        precondition(length <= 32)
        info[j] = 1
        let t = work + QUICInitialReader.expandAt
        guard hmac(key: secret, 32, info, j + 1, nil, 0, into: t) else { return false }
        out.copyMemory(from: t, byteCount: length)
        return true
    }
}
