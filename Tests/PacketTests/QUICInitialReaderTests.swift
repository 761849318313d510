import TestSupport
import COpenSSL
import Core
import Testing
@testable import Packet

/// Seals client Initial packets the way a QUIC client does (RFC 9001 §5), with libcrypto, so
/// tests can split a ClientHello over packets and frames. Keys come from the reader's own
/// derivation, which the RFC vectors pin down.
struct InitialSealer {
    var version: QUICVersion
    var dcid: [UInt8]

    func seal(pn: UInt32, frames: [UInt8], padTo: Int = 1200) -> [UInt8] {
        let keys = QUICInitialReader().derivedKeyBytes(version, dcid: dcid)!
        var header: [UInt8] = [0xC0 | (version.initialType << 4) | 0x03]
        header += [UInt8(version.rawValue >> 24), UInt8((version.rawValue >> 16) & 0xFF), UInt8((version.rawValue >> 8) & 0xFF), UInt8(version.rawValue & 0xFF)]
        header += [UInt8(dcid.count)] + dcid + [0] + [0]  // no SCID, no token
        var payload = frames
        let fixed = header.count + 2 + 4 + 16
        if fixed + payload.count < padTo { payload += [UInt8](repeating: 0, count: padTo - fixed - payload.count) }
        let length = 4 + payload.count + 16
        header += [0x40 | UInt8(length >> 8), UInt8(length & 0xFF)]
        let pnAt = header.count
        header += [UInt8(pn >> 24), UInt8((pn >> 16) & 0xFF), UInt8((pn >> 8) & 0xFF), UInt8(pn & 0xFF)]
        var nonce = keys.iv
        for j in 0..<4 { nonce[8 + j] ^= header[pnAt + j] }
        var cipher = [UInt8](repeating: 0, count: payload.count)
        var tag = [UInt8](repeating: 0, count: 16)
        let ctx = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ctx) }
        var n: Int32 = 0
        precondition(EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, keys.key, nonce) == 1)
        precondition(EVP_EncryptUpdate(ctx, nil, &n, header, Int32(header.count)) == 1)
        precondition(EVP_EncryptUpdate(ctx, &cipher, &n, payload, Int32(payload.count)) == 1)
        precondition(EVP_EncryptFinal_ex(ctx, &tag, &n) == 1)
        precondition(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1)
        var packet = header + cipher + tag
        // Header protection.
        let sample = Array(packet[(pnAt + 4)..<(pnAt + 20)])
        var mask = [UInt8](repeating: 0, count: 32)
        let ecb = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ecb) }
        precondition(EVP_EncryptInit_ex(ecb, EVP_aes_128_ecb(), nil, keys.hp, nil) == 1)
        precondition(EVP_EncryptUpdate(ecb, &mask, &n, sample, 16) == 1)
        packet[0] ^= mask[0] & 0x0F
        for j in 0..<4 { packet[pnAt + j] ^= mask[1 + j] }
        return packet
    }

    static func crypto(offset: Int, _ data: ArraySlice<UInt8>) -> [UInt8] {
        [0x06, 0x80 | UInt8(offset >> 24), UInt8((offset >> 16) & 0xFF), UInt8((offset >> 8) & 0xFF), UInt8(offset & 0xFF),
         0x40 | UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
    }
}

@Suite struct QUICInitialReaderTests {
    static let hello = Array(bytes(hex: QUICVectors.cryptoFrame)[4...])  // the ClientHello, frame header stripped

    func read(_ reader: QUICInitialReader, _ d: [UInt8], _ crypto: FirstFlightBuffer) -> QUICInitialOutcome {
        d.withUnsafeBytes { reader.read(datagram: $0, into: crypto) }
    }

    func host(_ o: QUICInitialOutcome, _ crypto: FirstFlightBuffer) -> String? {
        guard case .clientHello(let e) = o else { return nil }
        return e.lowercasedHost(in: crypto.contiguous)
    }

    @Test func keysMatchAppendixA1() {
        let r = QUICInitialReader()
        #expect(r.isReady)
        let v1 = r.derivedKeyBytes(.v1, dcid: bytes(hex: QUICVectors.dcid))!
        #expect(v1.key == bytes(hex: QUICVectors.v1ClientKey) && v1.iv == bytes(hex: QUICVectors.v1ClientIV) && v1.hp == bytes(hex: QUICVectors.v1ClientHP))
        let v2 = r.derivedKeyBytes(.v2, dcid: bytes(hex: QUICVectors.dcid))!
        #expect(v2.key == bytes(hex: QUICVectors.v2ClientKey) && v2.iv == bytes(hex: QUICVectors.v2ClientIV) && v2.hp == bytes(hex: QUICVectors.v2ClientHP))
    }

    @Test(arguments: [QUICVectors.v1Packet, QUICVectors.v2Packet])
    func appendixA2Decrypts(_ packetHex: String) {
        let r = QUICInitialReader()
        let crypto = FirstFlightBuffer()
        let packet = bytes(hex: packetHex)
        #expect(packet.count == 1200)
        let o = read(r, packet, crypto)
        #expect(host(o, crypto) == "example.com")
        // Exactly the RFC's CRYPTO frame content came out.
        #expect(Array(crypto.contiguous) == Self.hello)
        // The datagram is forwarded as it came: the reader must not have touched it.
        #expect(packet == bytes(hex: packetHex))
        // Again with the same DCID: keys from the cache.
        crypto.reset()
        #expect(host(read(r, packet, crypto), crypto) == "example.com")
        #expect(r.derivations == 1)
    }

    @Test func wrongKeysAndGarbage() {
        let r = QUICInitialReader()
        let crypto = FirstFlightBuffer()
        var packet = bytes(hex: QUICVectors.v1Packet)
        packet[6] ^= 1  // a DCID byte: other keys
        #expect(read(r, packet, crypto) == .failed(.decryptionFailed))
        packet = bytes(hex: QUICVectors.v1Packet)
        packet[600] ^= 0x80  // ciphertext
        #expect(read(r, packet, crypto) == .failed(.decryptionFailed))
        packet = bytes(hex: QUICVectors.v1Packet)
        packet[1199] ^= 1  // tag
        #expect(read(r, packet, crypto) == .failed(.decryptionFailed))
        // v1 bytes announced as v2: type bits 0b00 are a Retry in v2, not an Initial.
        packet = bytes(hex: QUICVectors.v1Packet)
        packet[1...4] = [0x6B, 0x33, 0x43, 0xCF]
        #expect(read(r, packet, crypto) == .notInitial)
        #expect(crypto.contiguousCount == 0)
        // Other shapes.
        #expect(read(r, [0x40, 1, 2, 3, 4, 5], crypto) == .notInitial)  // short header
        #expect(read(r, [0xC0, 0, 0, 0, 0, 8] + [UInt8](repeating: 1, count: 30), crypto) == .notInitial)  // version negotiation
        #expect(read(r, [0xC0, 0xFF, 0, 0, 0x1D, 8] + [UInt8](repeating: 1, count: 30), crypto) == .unsupportedVersion(0xFF00_001D))
        #expect(read(r, [0xC0, 0, 0, 0, 1, 21] + [UInt8](repeating: 1, count: 40), crypto) == .failed(.badConnectionID))
        #expect(read(r, [], crypto) == .notInitial)
        var rng = SplitMix(seed: 9001)
        for _ in 0..<2000 {
            var g = [UInt8](repeating: 0, count: Int(rng.next() % 1300))
            for k in g.indices { g[k] = UInt8(truncatingIfNeeded: rng.next()) }
            if g.count > 5 && rng.next() % 2 == 0 { g[0] |= 0xC0; g[1...4] = [0, 0, 0, 1] }
            if case .clientHello = read(r, g, crypto) { Issue.record("garbage decrypted") }
        }
    }

    @Test func everyTruncationFails() {
        let r = QUICInitialReader()
        let crypto = FirstFlightBuffer()
        let packet = bytes(hex: QUICVectors.v2Packet)
        for n in 0..<packet.count {
            let o = read(r, Array(packet[0..<n]), crypto)
            switch o {
            case .failed(.truncated), .failed(.badLength), .notInitial: break
            default: Issue.record("prefix \(n): \(o)")
            }
        }
        #expect(crypto.contiguousCount == 0)
    }

    @Test(arguments: QUICVersion.allCases)
    func clientHelloOverTwoPacketsOutOfOrder(_ version: QUICVersion) {
        let sealer = InitialSealer(version: version, dcid: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        let hello = Self.hello
        let r = QUICInitialReader()
        let crypto = FirstFlightBuffer()
        for cut in [1, 50, 100, 200, hello.count - 1] {
            crypto.reset()
            let second = sealer.seal(pn: 1, frames: InitialSealer.crypto(offset: cut, hello[cut...]))
            let first = sealer.seal(pn: 0, frames: [0x01] + InitialSealer.crypto(offset: 0, hello[..<cut]))
            #expect(read(r, second, crypto) == .clientHello(.needMoreData), "cut \(cut)")
            #expect(host(read(r, first, crypto), crypto) == "example.com", "cut \(cut)")
        }
        #expect(r.derivations == 1)
    }

    /// Chrome-style: one Initial, the ClientHello in shuffled CRYPTO frames between PINGs and
    /// PADDING; and two Initials coalesced in one datagram.
    @Test func shuffledFramesAndCoalescedPackets() {
        let sealer = InitialSealer(version: .v1, dcid: [9, 9, 9, 9, 9, 9, 9, 9])
        let hello = Self.hello
        let frames = InitialSealer.crypto(offset: 150, hello[150...]) + [0x01, 0x00, 0x00]
            + InitialSealer.crypto(offset: 0, hello[..<70]) + [0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00]
            + InitialSealer.crypto(offset: 70, hello[70..<150])
        let r = QUICInitialReader()
        let crypto = FirstFlightBuffer()
        #expect(host(read(r, sealer.seal(pn: 0, frames: frames), crypto), crypto) == "example.com")
        crypto.reset()
        let a = sealer.seal(pn: 0, frames: InitialSealer.crypto(offset: 0, hello[..<100]), padTo: 0)
        let b = sealer.seal(pn: 1, frames: InitialSealer.crypto(offset: 100, hello[100...]), padTo: 0)
        #expect(host(read(r, a + b, crypto), crypto) == "example.com")
        // An unknown frame type stops the packet.
        crypto.reset()
        #expect(read(r, sealer.seal(pn: 2, frames: [0x08, 0x00]), crypto) == .failed(.badFrame))
    }
}
