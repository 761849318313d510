// Published test vectors for every primitive the core wraps.
import Core
import Testing
@testable import WireGuard

struct CryptoVectorTests {
    @Test func blake2sRFC7693AppendixB() {
        #expect(hexString(Blake2s.hash(Array("abc".utf8)))
            == "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982")
    }

    @Test func blake2sKeyedKAT() {
        // blake2s-kat.txt (BLAKE2 reference): key 00..1f, empty input.
        let key = (0..<32).map { UInt8($0) }
        #expect(hexString(Blake2s.hash([], key: key))
            == "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49")
    }

    /// RFC 7693 Appendix E self-test: keyed and unkeyed BLAKE2s over many lengths, hashed together.
    @Test func blake2sRFC7693SelfTest() {
        func sequence(_ length: Int, seed: UInt32) -> [UInt8] {
            var a: UInt32 = 0xDEAD_4BAD &* seed
            var b: UInt32 = 1
            return (0..<length).map { _ in
                let t = a &+ b
                a = b
                b = t
                return UInt8(truncatingIfNeeded: t >> 24)
            }
        }
        var all: [UInt8] = []
        for outlen in [16, 20, 28, 32] {
            for inlen in [0, 3, 64, 65, 255, 1024] {
                let input = sequence(inlen, seed: UInt32(inlen))
                all += Blake2s.hash(input, outputLength: outlen)
                all += Blake2s.hash(input, key: sequence(outlen, seed: UInt32(outlen)), outputLength: outlen)
            }
        }
        #expect(hexString(Blake2s.hash(all))
            == "6a411f08ce25adcdfb02aba641451cec53c598b24f4fc787fbdc88797f4c1dfe")
    }

    @Test func mac16IsKeyedBlake2s128() {
        let key = (0..<32).map { UInt8($0) }
        let data = Array("mac input".utf8)
        #expect(Blake2s.mac16(key: key, data) == Blake2s.hash(data, key: key, outputLength: 16))
    }

    /// HMAC-BLAKE2s against the RFC 2104 definition written out with the plain hash.
    @Test func hmacMatchesDefinition() {
        let key = Array("key".utf8)
        let msg = Array("The quick brown fox jumps over the lazy dog".utf8)
        let k = key + [UInt8](repeating: 0, count: 64 - key.count)
        let expected = Blake2s.hash(k.map { $0 ^ 0x5c } + Blake2s.hash(k.map { $0 ^ 0x36 } + msg))
        #expect(Blake2s.hmac(key: key, msg) == expected)
        // Python: hmac.new(b"key", msg, hashlib.blake2s).hexdigest()
        #expect(hexString(Blake2s.hmac(key: key, msg))
            == "f93215bb90d4af4c3061cd932fb169fb8bb8a91d0b4022baea1271e1323cd9a0")
    }

    static let sunscreen = Array(
        "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
            .utf8)

    @Test func chacha20Poly1305RFC8439Section2_8_2() {
        let key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
        let nonce = hex("070000004041424344454647")
        let ad = hex("50515253c0c1c2c3c4c5c6c7")
        let expected = hex(
            "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b"
                + "1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
                + "3ff4def08e4b7a9de576d26586cec64b6116" + "1ae10b594f09e26a7e902ecbd0600691")
        for backend in AEAD.Backend.allCases {
            let sealed = AEAD.sealIETF(backend, key: key, nonce: nonce, plaintext: Self.sunscreen, ad: ad)
            #expect(sealed == expected, "\(backend)")
            #expect(AEAD.openIETF(backend, key: key, nonce: nonce, ciphertext: sealed, ad: ad) == Self.sunscreen, "\(backend)")
            var tampered = sealed
            tampered[0] ^= 1
            #expect(AEAD.openIETF(backend, key: key, nonce: nonce, ciphertext: tampered, ad: ad) == nil, "\(backend)")
            var badTag = sealed
            badTag[badTag.count - 1] ^= 0x80
            #expect(AEAD.openIETF(backend, key: key, nonce: nonce, ciphertext: badTag, ad: ad) == nil, "\(backend)")
        }
    }

    /// RFC 8439 Appendix A.5 (the AEAD decryption example, 265 bytes with a 12-byte AD).
    @Test func chacha20Poly1305RFC8439AppendixA5() {
        let key = hex("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0")
        let nonce = hex("000000000102030405060708")
        let ad = hex("f33388860000000000004e91")
        let ciphertext = hex(
            "64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb24c6cfc18755d43eea09ee94e382d26b0"
                + "bdb7b73c321b0100d4f03b7f355894cf332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855"
                + "9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4b9166c767b804d46a59b5216cde7a4e9"
                + "9040c5a40433225ee282a1b0a06c523eaf4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a"
                + "0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a1049e617d91d361094fa68f0ff77987130"
                + "305beaba2eda04df997b714d6c6f2c29a6ad5cb4022b02709b" + "eead9d67890cbb22392336fea1851f38")
        let plaintext = Array(("Internet-Drafts are draft documents valid for a maximum of six months and may be updated, replaced, "
            + "or obsoleted by other documents at any time. It is inappropriate to use Internet-Drafts as reference material "
            + "or to cite them other than as /\u{201c}work in progress./\u{201d}").utf8)
        for backend in AEAD.Backend.allCases {
            #expect(AEAD.openIETF(backend, key: key, nonce: nonce, ciphertext: ciphertext, ad: ad) == plaintext, "\(backend)")
            #expect(AEAD.sealIETF(backend, key: key, nonce: nonce, plaintext: plaintext, ad: ad) == ciphertext, "\(backend)")
        }
    }

    /// libsodium and OpenSSL agree byte for byte on every length 0...2,000 (OpenSSL switches code
    /// paths with the length: its AVX-512 code runs above 512 bytes), with and without AD, and each
    /// opens what the other sealed, through the counter API the transport path uses.
    @Test func backendsAgreeOnEveryLength() {
        var rng = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var mismatches = 0
        for length in 0...2000 {
            let msg = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let ad: [UInt8] = length % 3 == 0 ? [] : (0..<(length % 40)).map { UInt8($0) }
            let counter = UInt64.random(in: 0...UInt64.max, using: &rng)
            var sealed: [[UInt8]] = []
            for backend in AEAD.Backend.allCases {
                var buffer = msg + [UInt8](repeating: 0, count: AEAD.tagSize)
                key.withUnsafeBytes { k in
                    ad.withUnsafeBytes { a in
                        buffer.withUnsafeMutableBytes {
                            AEAD.seal(backend, key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: length, ad: a.baseAddress, adLength: a.count)
                        }
                    }
                }
                sealed.append(buffer)
            }
            if sealed[0] != sealed[1] { mismatches += 1 }
            for backend in AEAD.Backend.allCases {
                for s in sealed {
                    var buffer = s
                    let ok = key.withUnsafeBytes { k in
                        ad.withUnsafeBytes { a in
                            buffer.withUnsafeMutableBytes {
                                AEAD.open(backend, key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: s.count, ad: a.baseAddress, adLength: a.count)
                            }
                        }
                    }
                    if !ok || Array(buffer.prefix(length)) != msg { mismatches += 1 }
                    // A flipped bit anywhere fails, and OpenSSL leaves no plaintext behind.
                    var bad = s
                    bad[length / 2] ^= 4
                    let badOK = key.withUnsafeBytes { k in
                        ad.withUnsafeBytes { a in
                            bad.withUnsafeMutableBytes {
                                AEAD.open(backend, key: k.baseAddress!, counter: counter, data: $0.baseAddress!, length: s.count, ad: a.baseAddress, adLength: a.count)
                            }
                        }
                    }
                    if badOK { mismatches += 1 }
                    if backend == .openssl && length > 0 && bad.prefix(length).contains(where: { $0 != 0 }) { mismatches += 1 }
                }
            }
        }
        #expect(mismatches == 0)
    }

    /// The counter nonce layout: 4 zero bytes then the 64-bit counter little-endian.
    @Test func counterNonceLayout() {
        let key = (0..<32).map { UInt8($0) }
        let counter: UInt64 = 0x0102_0304_0506_0708
        let nonce: [UInt8] = [0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1]
        let msg = Array("payload".utf8)
        #expect(AEAD.seal(key: key, counter: counter, plaintext: msg, ad: [9])
            == AEAD.sealIETF(key: key, nonce: nonce, plaintext: msg, ad: [9]))
        #expect(AEAD.open(key: key, counter: counter, ciphertext: AEAD.seal(key: key, counter: counter, plaintext: msg, ad: []), ad: []) == msg)
    }

    @Test func xchacha20Poly1305DraftA_3_1() {
        // draft-irtf-cfrg-xchacha-03 Appendix A.3.1.
        let key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
        let nonce = hex("404142434445464748494a4b4c4d4e4f5051525354555657")
        let ad = hex("50515253c0c1c2c3c4c5c6c7")
        let expected = hex(
            "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39"
                + "ae64c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
                + "21f9664c97637da9768812f615c68b13b52e" + "c0875924c1c7987947deafd8780acf49")
        let sealed = AEAD.xseal(key: key, nonce: nonce, plaintext: Self.sunscreen, ad: ad)
        #expect(sealed == expected)
        #expect(AEAD.xopen(key: key, nonce: nonce, ciphertext: sealed, ad: ad) == Self.sunscreen)
        #expect(AEAD.xopen(key: key, nonce: nonce, ciphertext: sealed, ad: []) == nil)
    }

    @Test func x25519RFC7748Section5_2() {
        let scalar = hex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4")
        let u = hex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
        #expect(X25519.sharedSecret(scalar, u)
            == hex("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"))
    }

    @Test func x25519RFC7748Section6_1() {
        let alice = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        let bob = hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
        let alicePub = X25519.publicKey(of: alice)
        let bobPub = X25519.publicKey(of: bob)
        #expect(alicePub == hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        #expect(bobPub == hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        let k = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(X25519.sharedSecret(alice, bobPub) == k)
        #expect(X25519.sharedSecret(bob, alicePub) == k)
    }

    @Test func x25519RejectsLowOrderPoint() {
        let alice = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        #expect(X25519.sharedSecret(alice, [UInt8](repeating: 0, count: 32)) == nil)
    }

    @Test func tai64nLayout() {
        // 1970 + 1 s + 0x01ffffff ns: seconds offset 2^62 + 10, nanoseconds rounded down to 2^24.
        let t = TAI64N(unixNanoseconds: 1 * 1_000_000_000 + 0x01ff_ffff)
        #expect(hexString(t.bytes) == "400000000000000b" + "01000000")
        #expect(TAI64N(unixNanoseconds: 5_000_000_000) > t)
        #expect(!(TAI64N(unixNanoseconds: 1_000_000_001) > TAI64N(unixNanoseconds: 1_000_000_000)))
    }

    @Test func base64RoundTripsKeys() {
        let key = PublicKey((0..<32).map { UInt8($0) })!
        #expect(key.base64 == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
        #expect(PublicKey(base64: key.base64) == key)
        #expect(PublicKey(base64: "AAEC") == nil)
        #expect(PublicKey(base64: "!AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=") == nil)
    }

    @Test func secretBufferZeroes() {
        let s = SecretBuffer.copy(of: [1, 2, 3, 4])
        #expect(!s.isZero)
        s.clear()
        #expect(s.isZero)
        #expect(s.read(0, 4) == [0, 0, 0, 0])
    }
}
