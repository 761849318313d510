// What counts toward "under load" (whitepaper §5.3): only handshake messages of their exact length
// whose mac1 verifies under our own key.
import Core
import Packet
import Testing
import WireGuard

struct HandshakeScreenTests {
    func counts(_ device: WireGuardDevice, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { device.countsTowardLoad($0) }
    }

    func type(_ bytes: [UInt8]) -> MessageType? { bytes.withUnsafeBytes { HandshakeScreen.messageType($0) } }

    @Test func aRealInitiationAndResponseCountOnlyForTheirRecipient() throws {
        let p = Pair()
        let ini = try #require(initiation(p, fromA: true, now: second, wall: second))
        #expect(type(ini) == .initiation)
        #expect(counts(p.b, ini), "mac1 over B's key: counts at B")
        #expect(!counts(p.a, ini), "mac1 over B's key does not verify under A's")
        let (r, _, out) = deliver(ini, to: p.b, from: endpointA, now: second)
        guard case .sendResponse(_, let range) = r else { Issue.record("\(r)"); return }
        let response = Array(out[range])
        #expect(type(response) == .response)
        #expect(counts(p.a, response))
        #expect(!counts(p.b, response))
    }

    @Test func everyOtherLengthAndEveryFlippedByteDoesNotCount() throws {
        let p = Pair()
        let ini = try #require(initiation(p, fromA: true, now: second, wall: second))
        // Every truncation and every extension up to 300 bytes, keeping the type field.
        for length in 0...300 where length != ini.count {
            var m = Array(ini.prefix(length))
            while m.count < length { m.append(0) }
            #expect(!counts(p.b, m), "length \(length)")
            if length != MessageLayout.Response.size && length != MessageLayout.CookieReply.size {
                #expect(type(m) == nil, "length \(length)")
            }
        }
        // Any bit flipped in the part mac1 covers, in mac1 itself, or in the reserved type bytes.
        for i in 0..<MessageLayout.Initiation.mac2 {
            var m = ini
            m[i] ^= 0x01
            #expect(!counts(p.b, m), "byte \(i)")
        }
        // mac2 is not covered by mac1: a different mac2 still counts (mac2 is checked under load).
        var m = ini
        m[MessageLayout.Initiation.mac2] ^= 0xff
        #expect(counts(p.b, m))
    }

    @Test func junkAndCookieRepliesNeverCount() throws {
        let p = Pair()
        for first: UInt8 in 0...5 {
            #expect(!counts(p.b, [first]), "1-byte \(first)")
            #expect(type([first]) == nil)
            #expect(!counts(p.b, [first, 0, 0, 0]))
        }
        // 148 bytes of type 1 with a random body: the mac1 is wrong.
        let random = TestRandom(seed: 99)
        for _ in 0..<200 {
            var m = random.bytes(MessageLayout.Initiation.size)
            m[0] = 1; m[1] = 0; m[2] = 0; m[3] = 0
            #expect(type(m) == .initiation)
            #expect(!counts(p.b, m))
        }
        // A cookie reply of its exact length is a handshake message but carries no mac1.
        var cookie = [UInt8](repeating: 0x5a, count: MessageLayout.CookieReply.size)
        cookie[0] = 3; cookie[1] = 0; cookie[2] = 0; cookie[3] = 0
        #expect(type(cookie) == .cookieReply)
        #expect(!counts(p.b, cookie))
        // A transport message is not a handshake message.
        var transport = [UInt8](repeating: 0, count: 148)
        transport[0] = 4
        #expect(type(transport) == nil)
        #expect(!counts(p.b, transport))
    }

    @Test func aForgedMAC1OverTheRightKeyCounts() throws {
        // What a flooder can do without any secret (tunnelbench hsflood): random bytes, mac1 over
        // the gateway's public key. It counts; the device then drops it (unknown static key).
        let p = Pair()
        var m = TestRandom(seed: 5).bytes(MessageLayout.Initiation.size)
        m[0] = 1; m[1] = 0; m[2] = 0; m[3] = 0
        MACs.writeMAC1(&m, key: MACs.mac1Key(p.b.publicKey.bytes))
        #expect(counts(p.b, m))
        #expect(!counts(p.a, m))
        let (r, _, _) = deliver(m, to: p.b, from: endpointA, now: second)
        #expect(r != .sendCookieReply(range: 0..<64))
        if case .sendResponse = r { Issue.record("a forged initiation was answered") }
    }
}
