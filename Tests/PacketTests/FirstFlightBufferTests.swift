import Core
import Testing
@testable import Packet

/// The SNI of what `buffer` holds so far.
func bufferedSNI(_ buffer: FirstFlightBuffer) -> HostExtraction { TLSClientHello.serverName(in: buffer.contiguous) }

/// A ClientHello as a modern browser sends it: GREASE cipher suite and extensions (RFC 8701),
/// then `extra` extensions, then SNI, padded with a large key share so it spans segments.
func greasedHello(name: String, extra: [(UInt16, [UInt8])] = [], keyShare: Int = 1216) -> [UInt8] {
    var body: [UInt8] = [3, 3] + [UInt8](repeating: 0x5A, count: 32) + [32] + [UInt8](repeating: 7, count: 32)
    body += [0, 6, 0x3A, 0x3A, 0x13, 0x01, 0x13, 0x02] + [1, 0]
    var ext: [UInt8] = []
    func add(_ t: UInt16, _ b: [UInt8]) { ext += TestPackets.be16(t) + TestPackets.be16(UInt16(b.count)) + b }
    add(0x0A0A, [])  // GREASE, empty
    add(0x1A1A, [0])  // GREASE with a byte
    for (t, b) in extra { add(t, b) }
    add(0x0033, [UInt8](repeating: 0x33, count: keyShare))  // key_share (X25519MLKEM768-sized)
    let (t, b) = sniExtension(name)
    add(t, b)
    add(0xFAFA, [0])
    body += TestPackets.be16(UInt16(ext.count)) + ext
    let hs: [UInt8] = [1, 0] + TestPackets.be16(UInt16(body.count)) + body
    return [22, 3, 1] + TestPackets.be16(UInt16(hs.count)) + hs
}

@Suite struct FirstFlightBufferTests {
    @Test func inOrderAndReversedAtEveryBoundary() {
        let hello = greasedHello(name: "split.example.com")
        let expected = sni(hello)
        #expect(text(hello, expected) == "split.example.com")
        let buffer = FirstFlightBuffer()
        let isn: UInt32 = 0xFFFF_FF00  // wraps inside the hello
        for k in 1..<hello.count {
            // In order.
            buffer.reset(initialSequence: isn)
            hello[0..<k].withUnsafeBytes { buffer.insert(sequence: isn, $0) }
            let partial = bufferedSNI(buffer)
            #expect(partial == .needMoreData || partial == expected, "split \(k)")
            hello[k...].withUnsafeBytes { buffer.insert(sequence: isn &+ UInt32(k), $0) }
            #expect(bufferedSNI(buffer) == expected, "split \(k)")
            // Second segment first: nothing contiguous until the first arrives.
            buffer.reset(initialSequence: isn)
            hello[k...].withUnsafeBytes { buffer.insert(sequence: isn &+ UInt32(k), $0) }
            #expect(buffer.contiguousCount == 0)
            #expect(bufferedSNI(buffer) == .needMoreData)
            hello[0..<k].withUnsafeBytes { buffer.insert(sequence: isn, $0) }
            #expect(bufferedSNI(buffer) == expected && buffer.contiguousCount == hello.count, "split \(k) reversed")
        }
    }

    @Test func shuffledOverlappingDuplicatedSegments() {
        let hello = greasedHello(name: "shuffle.example.org")
        var rng = SplitMix(seed: 793)
        let buffer = FirstFlightBuffer()
        for _ in 0..<300 {
            // Random pieces covering everything, some overlapping, delivered in random order.
            var pieces: [(Int, Int)] = []
            var at = 0
            while at < hello.count {
                let len = 1 + Int(rng.next() % 300)
                let start = max(0, at - Int(rng.next() % 20))
                pieces.append((start, min(hello.count, at + len)))
                at += len
            }
            if rng.next() % 2 == 0 { pieces.append(pieces[Int(rng.next() % UInt64(pieces.count))]) }
            pieces.shuffle(using: &rng)
            let isn = UInt32(truncatingIfNeeded: rng.next())
            buffer.reset(initialSequence: isn)
            for (s, e) in pieces { hello[s..<e].withUnsafeBytes { buffer.insert(sequence: isn &+ UInt32(s), $0) } }
            #expect(buffer.contiguousCount == hello.count)
            #expect(Array(buffer.contiguous) == hello)
        }
    }

    @Test func boundsAndOldData() {
        let buffer = FirstFlightBuffer(capacity: 100)
        buffer.reset(initialSequence: 1000)
        let data = [UInt8](0..<150)
        // Starts 10 bytes before the stream (a retransmission overlapping the SYN): clipped.
        data.withUnsafeBytes { buffer.insert(sequence: 990, $0) }
        #expect(buffer.contiguousCount == 100 && buffer.isFull)
        #expect(buffer.contiguous.first == 10 && buffer.contiguous.last == 109)
        #expect(buffer.droppedBytes == 40)
        // Entirely before the stream, or 2 GiB away: ignored.
        buffer.reset(initialSequence: 1000)
        data.withUnsafeBytes { buffer.insert(sequence: 500, $0) }
        data.withUnsafeBytes { buffer.insert(sequence: 1000 &+ 0x8000_0000, $0) }
        #expect(buffer.contiguousCount == 0)
        // Beyond the bound: counted, not kept.
        data.withUnsafeBytes { buffer.insert(offset: 100, $0) }
        #expect(buffer.contiguousCount == 0 && buffer.droppedBytes == 150)
        // A hole keeps the rest from counting as contiguous.
        buffer.reset()
        data[0..<10].withUnsafeBytes { buffer.insert(offset: 0, $0) }
        data[11..<50].withUnsafeBytes { buffer.insert(offset: 11, $0) }
        #expect(buffer.contiguousCount == 10)
        data[10..<11].withUnsafeBytes { buffer.insert(offset: 10, $0) }
        #expect(buffer.contiguousCount == 50)
    }

    /// The first copy of a byte wins (an overlapping retransmission with other bytes changes nothing).
    @Test func firstCopyWins() {
        let buffer = FirstFlightBuffer(capacity: 256)
        buffer.reset()
        [UInt8](repeating: 1, count: 130).withUnsafeBytes { buffer.insert(offset: 0, $0) }
        [UInt8](repeating: 2, count: 200).withUnsafeBytes { buffer.insert(offset: 10, $0) }
        #expect(buffer.contiguousCount == 210)
        #expect(Array(buffer.contiguous[0..<130]) == [UInt8](repeating: 1, count: 130))
        #expect(Array(buffer.contiguous[130..<210]) == [UInt8](repeating: 2, count: 80))
    }
}

@Suite struct ClientHelloVariantTests {
    @Test func greaseIsSkipped() {
        let hello = greasedHello(name: "grease.example")
        #expect(text(hello, sni(hello)) == "grease.example")
    }

    /// ECH (draft-ietf-tls-esni, extension 0xfe0d): what we see is the outer SNI.
    @Test func echOuterNameIsWhatWeSee() {
        let ech: (UInt16, [UInt8]) = (0xFE0D, [0] + [0, 1, 0, 1] + [0x42] + [0, 32] + [UInt8](repeating: 0xEE, count: 32) + [0, 200] + [UInt8](repeating: 0xCC, count: 200))
        let hello = greasedHello(name: "public.cloudflare-ech.com", extra: [ech])
        #expect(text(hello, sni(hello)) == "public.cloudflare-ech.com")
    }

    @Test func noSNI() {
        var hello = clientHello(extensions: [(0x0A0A, []), (0x0033, [UInt8](repeating: 1, count: 40)), (0x002B, [2, 3, 4])])
        #expect(sni(hello) == .notPresent)
        hello = clientHello(extensions: [])
        #expect(sni(hello) == .notPresent)
    }

    /// The record-less form QUIC carries in CRYPTO frames gives the same answer at every length.
    @Test func handshakeWithoutRecordHeader() {
        let hello = greasedHello(name: "quic.example")
        let message = Array(hello[5...])
        guard case .found(let r) = sni(hello) else { Issue.record("no SNI"); return }
        let shifted = (r.lowerBound - 5)..<(r.upperBound - 5)
        for n in 0...message.count {
            let got = message[0..<n].withUnsafeBytes { TLSClientHello.serverName(inHandshake: $0) }
            #expect(got == (n >= shifted.upperBound ? .found(shifted) : .needMoreData), "length \(n)")
        }
        #expect([UInt8]([2, 0, 0, 0]).withUnsafeBytes { TLSClientHello.serverName(inHandshake: $0) } == .notPresent)
        // A complete message whose extensions block is cut: malformed, not "more data".
        var cut = message
        cut[1...3] = [0, 0, 80]
        #expect(cut.withUnsafeBytes { TLSClientHello.serverName(inHandshake: $0) } == .malformed)
    }
}

@Suite struct HTTPSplitTests {
    /// An HTTP request head split over two segments at every byte, in either order.
    @Test func splitRequestEveryBoundary() {
        let req = Array("GET /a HTTP/1.1\r\nUser-Agent: curl/8\r\nHost: Ads.Example.com\r\n\r\n".utf8)
        let expected = httpHost(req)
        #expect(text(req, expected) == "ads.example.com")
        let buffer = FirstFlightBuffer()
        for k in 1..<req.count {
            buffer.reset(initialSequence: 77)
            req[k...].withUnsafeBytes { buffer.insert(sequence: 77 + UInt32(k), $0) }
            #expect(HTTPRequestHost.host(in: buffer.contiguous) == .needMoreData)
            req[0..<k].withUnsafeBytes { buffer.insert(sequence: 77, $0) }
            #expect(HTTPRequestHost.host(in: buffer.contiguous) == expected, "split \(k)")
        }
    }

    @Test func moreRequestShapes() {
        let absolute = Array("GET http://proxy.example/x HTTP/1.1\r\nHost: proxy.example\r\n\r\n".utf8)
        #expect(text(absolute, httpHost(absolute)) == "proxy.example")
        let connect = Array("CONNECT tunnel.example:443 HTTP/1.1\r\nHost: tunnel.example:443\r\n\r\n".utf8)
        #expect(text(connect, httpHost(connect)) == "tunnel.example")
        let twoHosts = Array("GET / HTTP/1.1\r\nHost: first.example\r\nHost: second.example\r\n\r\n".utf8)
        #expect(text(twoHosts, httpHost(twoHosts)) == "first.example")
        #expect(httpHost(Array("GET / HTTP/1.1\r\nHost:\r\n\r\n".utf8)) == .malformed)
        #expect(httpHost(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)) == .notPresent)
        #expect(httpHost(Array("get / HTTP/1.1\r\nHost: a.example\r\n\r\n".utf8)) == .notPresent)
    }
}

@Suite struct FirstFlightPoolTests {
    @Test func acquireReleaseBounded() {
        let pool = FirstFlightPool(count: 3, capacity: 64)
        let a = pool.acquire(initialSequence: 5)!
        let b = pool.acquire()!
        let c = pool.acquire()!
        #expect(Set([a, b, c]).count == 3 && pool.inUse == 3)
        #expect(pool.acquire() == nil)
        [UInt8](repeating: 1, count: 10).withUnsafeBytes { pool[a].insert(sequence: 5, $0) }
        #expect(pool[a].contiguousCount == 10)
        pool.release(a)
        let again = pool.acquire(initialSequence: 100)!
        #expect(again == a && pool[again].contiguousCount == 0 && pool[again].initialSequence == 100)
    }
}

/// Splits a one-record ClientHello into records of at most `size` handshake bytes each.
func fragmentRecords(_ hello: [UInt8], size: Int) -> [UInt8] {
    let body = Array(hello[5...])
    var out: [UInt8] = []
    var i = 0
    while i < body.count {
        let piece = body[i..<min(body.count, i + size)]
        out += [22, 3, 1] + TestPackets.be16(UInt16(piece.count)) + piece
        i += size
    }
    return out
}

@Suite struct FirstFlightHostTests {
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 16)

    func find(_ b: [UInt8]) -> (HostExtraction, HostSource?, String?) {
        b.withUnsafeBytes { let r = FirstFlightHost.find(in: $0, scratch: scratch); return (r.extraction, r.source, r.lowercasedHost) }
    }

    @Test func tlsThenHTTP() {
        let hello = greasedHello(name: "tls.example")
        #expect(find(hello).1 == .tlsSNI && find(hello).2 == "tls.example")
        let req = Array("GET / HTTP/1.1\r\nHost: web.example\r\n\r\n".utf8)
        #expect(find(req).1 == .httpHost && find(req).2 == "web.example")
        // A TLS record that is not a ClientHello is not read as HTTP either.
        #expect(find([22, 3, 3, 0, 4, 2, 0, 0, 0]).1 == nil)
        #expect(find(Array("SSH-2.0-x\r\n".utf8)).0 == .notPresent && find(Array("SSH-2.0-x\r\n".utf8)).1 == nil)
        #expect(find(Array(hello[0..<40])).0 == .needMoreData && find(Array(hello[0..<40])).1 == .tlsSNI)
        #expect(find(Array(req[0..<10])).0 == .needMoreData && find(Array(req[0..<10])).1 == .httpHost)
        #expect(find([]).0 == .needMoreData)
    }

    /// A ClientHello fragmented over TLS records (as SNI-hiding tools send it) is read anyway,
    /// at every record size and every prefix.
    @Test func clientHelloOverSeveralRecords() {
        let hello = greasedHello(name: "hidden.example.net", keyShare: 64)
        for size in [1, 2, 3, 7, 40, 100, 150, 200] {
            let records = fragmentRecords(hello, size: size)
            #expect(find(records).2 == "hidden.example.net", "records of \(size)")
            // Every prefix: more data needed until the name has arrived, never a wrong answer.
            for n in 0..<records.count {
                let (r, _, name) = find(Array(records[0..<n]))
                #expect(r == .needMoreData || name == "hidden.example.net", "records of \(size), prefix \(n)")
            }
            // Followed by another record type: still read.
            #expect(find(records + [20, 3, 3, 0, 1, 1]).2 == "hidden.example.net")
        }
        // Direct: the joined view is the handshake message.
        let records = fragmentRecords(hello, size: 50)
        let (r, joined) = records.withUnsafeBytes { TLSClientHello.serverName(acrossRecords: $0, scratch: scratch) }
        #expect(Array(joined) == Array(hello[5...]))
        #expect(r.lowercasedHost(in: joined) == "hidden.example.net")
        #expect([UInt8]([23, 3, 3, 0, 1, 0]).withUnsafeBytes { TLSClientHello.serverName(acrossRecords: $0, scratch: scratch) }.0 == .notPresent)
        #expect([UInt8]([22, 3]).withUnsafeBytes { TLSClientHello.serverName(acrossRecords: $0, scratch: scratch) }.0 == .needMoreData)
    }
}
