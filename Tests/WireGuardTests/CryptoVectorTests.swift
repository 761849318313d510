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
        let sealed = AEAD.sealIETF(key: key, nonce: nonce, plaintext: Self.sunscreen, ad: ad)
        #expect(sealed == expected)
        #expect(AEAD.openIETF(key: key, nonce: nonce, ciphertext: sealed, ad: ad) == Self.sunscreen)
        var tampered = sealed
        tampered[0] ^= 1
        #expect(AEAD.openIETF(key: key, nonce: nonce, ciphertext: tampered, ad: ad) == nil)
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
        let s = SecretBuffer([1, 2, 3, 4])
        #expect(!s.isZero)
        s.clear()
        #expect(s.isZero)
        #expect(s.read(0, 4) == [0, 0, 0, 0])
    }
}
