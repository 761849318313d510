// ChaCha20-Poly1305 (IETF) through libsodium or OpenSSL (whichever is faster for the length),
// XChaCha20-Poly1305 through libsodium.
import CAEAD
import Core
import CSodium

/// Authenticated encryption as WireGuard uses it: RFC 8439 ChaCha20-Poly1305 with a 96-bit nonce of
/// 32 zero bits followed by a 64-bit little-endian counter (whitepaper §5.4 `AEAD`), and
/// XChaCha20-Poly1305 with a 192-bit random nonce for cookie replies (`XAEAD`).
public enum AEAD {
    /// Poly1305 tag length.
    public static let tagSize = 16
    /// Key length for both constructions.
    public static let keySize = 32

    /// The two vetted implementations of RFC 8439 ChaCha20-Poly1305 the transport path can use.
    public enum Backend: String, Sendable, CaseIterable {
        /// libsodium's `crypto_aead_chacha20poly1305_ietf_*`.
        case sodium
        /// OpenSSL 3's EVP `chacha20-poly1305` (its AVX2/AVX-512 code on CPUs that have them), one
        /// reused context per thread.
        case openssl
    }

    /// Messages of at least this many bytes go through OpenSSL, shorter ones through libsodium:
    /// measured with `tunnelbench wireguard` (raw rates at 64, 128, 256, 512 and 1420 bytes, same
    /// run), where OpenSSL's per-call setup costs more than its faster bulk code saves on short
    /// messages. See docs/wireguard.md.
    public static let openSSLFromLength = 576

    /// The backend `seal`/`open` use for a message of `length` bytes.
    @inline(__always)
    public static func backend(forLength length: Int) -> Backend { length >= openSSLFromLength ? .openssl : .sodium }

    /// Encrypts `length` bytes at `data` in place and writes the tag right after them (so `data` must
    /// have room for `length + 16` bytes). `counter` becomes the nonce as WireGuard lays it out.
    @inline(__always)
    public static func seal(key: UnsafeRawPointer, counter: UInt64, data: UnsafeMutableRawPointer, length: Int,
                            ad: UnsafeRawPointer?, adLength: Int) {
        seal(backend(forLength: length), key: key, counter: counter, data: data, length: length, ad: ad, adLength: adLength)
    }

    /// `seal` through a given backend (tests and benchmarks compare them). OpenSSL failing to make
    /// its context (out of memory) falls back to libsodium: the result is the same bytes.
    @inline(__always)
    public static func seal(_ backend: Backend, key: UnsafeRawPointer, counter: UInt64, data: UnsafeMutableRawPointer, length: Int,
                            ad: UnsafeRawPointer?, adLength: Int) {
        var nonce: (UInt64, UInt64) = (counter.littleEndian << 32, counter.littleEndian >> 32)
        withUnsafeBytes(of: &nonce) { n in
            let m = data.assumingMemoryBound(to: UInt8.self)
            let np = n.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if backend == .openssl,
               tv_evp_chacha_seal(key.assumingMemoryBound(to: UInt8.self), np, m, length, ad?.assumingMemoryBound(to: UInt8.self), adLength) == 1 {
                return
            }
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                m, nil, m, UInt64(length), ad?.assumingMemoryBound(to: UInt8.self), UInt64(adLength), nil,
                np, key.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Verifies and decrypts `length` bytes (ciphertext + tag) at `data` in place; the plaintext is the
    /// first `length - 16` bytes. Returns false (and leaves no plaintext) when the tag does not verify.
    @inline(__always)
    public static func open(key: UnsafeRawPointer, counter: UInt64, data: UnsafeMutableRawPointer, length: Int,
                            ad: UnsafeRawPointer?, adLength: Int) -> Bool {
        open(backend(forLength: length - tagSize), key: key, counter: counter, data: data, length: length, ad: ad, adLength: adLength)
    }

    /// `open` through a given backend; OpenSSL failing to make its context falls back to libsodium.
    @inline(__always)
    public static func open(_ backend: Backend, key: UnsafeRawPointer, counter: UInt64, data: UnsafeMutableRawPointer, length: Int,
                            ad: UnsafeRawPointer?, adLength: Int) -> Bool {
        guard length >= tagSize else { return false }
        var nonce: (UInt64, UInt64) = (counter.littleEndian << 32, counter.littleEndian >> 32)
        return withUnsafeBytes(of: &nonce) { n in
            let m = data.assumingMemoryBound(to: UInt8.self)
            let np = n.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if backend == .openssl {
                let rc = tv_evp_chacha_open(key.assumingMemoryBound(to: UInt8.self), np, m, length, ad?.assumingMemoryBound(to: UInt8.self), adLength)
                if rc >= 0 { return rc == 1 }
            }
            return crypto_aead_chacha20poly1305_ietf_decrypt(
                m, nil, nil, m, UInt64(length), ad?.assumingMemoryBound(to: UInt8.self), UInt64(adLength),
                np, key.assumingMemoryBound(to: UInt8.self)) == 0
        }
    }

    /// `AEAD(key, counter, plaintext, ad)` returning ciphertext ‖ tag (handshake path; allocates).
    public static func seal(key: [UInt8], counter: UInt64, plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        var out = plaintext + [UInt8](repeating: 0, count: tagSize)
        key.withUnsafeBytes { k in
            ad.withUnsafeBytes { a in
                out.withUnsafeMutableBytes {
                    seal(key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: plaintext.count,
                         ad: a.baseAddress, adLength: a.count)
                }
            }
        }
        return out
    }

    /// Inverse of `seal(key:counter:plaintext:ad:)`; nil when the tag does not verify.
    public static func open(key: [UInt8], counter: UInt64, ciphertext: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard ciphertext.count >= tagSize else { return nil }
        var buffer = ciphertext
        let ok = key.withUnsafeBytes { k in
            ad.withUnsafeBytes { a in
                buffer.withUnsafeMutableBytes {
                    open(key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: ciphertext.count,
                         ad: a.baseAddress, adLength: a.count)
                }
            }
        }
        guard ok else { return nil }
        buffer.removeLast(tagSize)
        return buffer
    }

    /// RFC 8439 ChaCha20-Poly1305 with an explicit 12-byte nonce (for test vectors), through `backend`.
    public static func sealIETF(_ backend: Backend = .sodium, key: [UInt8], nonce: [UInt8], plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 12)
        var out = plaintext + [UInt8](repeating: 0, count: tagSize)
        switch backend {
        case .sodium:
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(&out, nil, plaintext, UInt64(plaintext.count), ad,
                                                          UInt64(ad.count), nil, nonce, key)
        case .openssl:
            let rc = out.withUnsafeMutableBufferPointer { tv_evp_chacha_seal(key, nonce, $0.baseAddress, plaintext.count, ad, ad.count) }
            precondition(rc == 1, "OpenSSL ChaCha20-Poly1305 failed")
        }
        return out
    }

    /// RFC 8439 ChaCha20-Poly1305 open with an explicit 12-byte nonce, through `backend`; nil on a bad tag.
    public static func openIETF(_ backend: Backend = .sodium, key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], ad: [UInt8]) -> [UInt8]? {
        precondition(key.count == 32 && nonce.count == 12)
        guard ciphertext.count >= tagSize else { return nil }
        switch backend {
        case .sodium:
            var out = [UInt8](repeating: 0, count: ciphertext.count - tagSize)
            let rc = crypto_aead_chacha20poly1305_ietf_decrypt(&out, nil, nil, ciphertext, UInt64(ciphertext.count), ad,
                                                               UInt64(ad.count), nonce, key)
            return rc == 0 ? out : nil
        case .openssl:
            var buffer = ciphertext
            let rc = buffer.withUnsafeMutableBufferPointer { tv_evp_chacha_open(key, nonce, $0.baseAddress, ciphertext.count, ad, ad.count) }
            precondition(rc >= 0, "OpenSSL ChaCha20-Poly1305 failed")
            guard rc == 1 else { return nil }
            buffer.removeLast(tagSize)
            return buffer
        }
    }

    /// `XAEAD(key, nonce, plaintext, ad)`: XChaCha20-Poly1305 with a 24-byte nonce.
    public static func xseal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 24)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagSize)
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&out, nil, plaintext, UInt64(plaintext.count), ad,
                                                       UInt64(ad.count), nil, nonce, key)
        return out
    }

    /// Inverse of `xseal`; nil when the tag does not verify.
    public static func xopen(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], ad: [UInt8]) -> [UInt8]? {
        precondition(key.count == 32 && nonce.count == 24)
        guard ciphertext.count >= tagSize else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagSize)
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(&out, nil, nil, ciphertext, UInt64(ciphertext.count),
                                                            ad, UInt64(ad.count), nonce, key)
        return rc == 0 ? out : nil
    }
}
