import Core
import Testing
@testable import Packet

func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = hex.makeIterator()
    while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
    return out
}

func sni(_ b: [UInt8]) -> HostExtraction { b.withUnsafeBytes { TLSClientHello.serverName(in: $0) } }
func httpHost(_ b: [UInt8]) -> HostExtraction { b.withUnsafeBytes { HTTPRequestHost.host(in: $0) } }
func text(_ b: [UInt8], _ r: HostExtraction) -> String? { b.withUnsafeBytes { r.lowercasedHost(in: $0) } }

/// A ClientHello with the given extensions (type, body), in one record.
func clientHello(extensions: [(UInt16, [UInt8])]?, sessionID: Int = 32) -> [UInt8] {
    var body: [UInt8] = [3, 3] + [UInt8](repeating: 0x42, count: 32) + [UInt8(sessionID)] + [UInt8](repeating: 1, count: min(sessionID, 40))
    body += [0, 4, 0x13, 0x01, 0x13, 0x02] + [1, 0]
    if let extensions {
        var ext: [UInt8] = []
        for (t, b) in extensions { ext += TestPackets.be16(t) + TestPackets.be16(UInt16(b.count)) + b }
        body += TestPackets.be16(UInt16(ext.count)) + ext
    }
    let hs: [UInt8] = [1, 0] + TestPackets.be16(UInt16(body.count)) + body
    return [22, 3, 1] + TestPackets.be16(UInt16(hs.count)) + hs
}

func sniExtension(_ name: String, type: UInt8 = 0) -> (UInt16, [UInt8]) {
    let n = Array(name.utf8)
    let entry = [type] + TestPackets.be16(UInt16(n.count)) + n
    return (0, TestPackets.be16(UInt16(entry.count)) + entry)
}

@Suite struct TLSClientHelloTests {
    /// A real ClientHello (OpenSSL 3 via Python's ssl module, server_hostname "www.Example.com").
    static let openSSLHello = bytes(hex: "1603010200010001fc03037816643d3a80a44205d9432297b8325b134a35212043dec24fdddb617a80491e20a68f713b5c0cbecad8f189b2c1f8f28b5cf7c2dc704f885b0f5de803af6c22990024130213031301c02cc030c02bc02fcca9cca8c024c028c023c027009f009e006b006700ff0100018f00000014001200000f7777772e4578616d706c652e636f6d000b000403000102000a00160014001d0017001e0019001801000101010201030104002300000016000000170000000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205020602002b00050403040303002d00020101003300260024001d002038ef8c3589c7a64b4bfc0f8745b4aac6587fca93bb86e53b4c16e01ed3051446001500de")
        + [UInt8](repeating: 0, count: 0xDE)

    @Test func realClientHello() {
        let b = Self.openSSLHello
        #expect(b.count == 517)
        let r = sni(b)
        #expect(r == .found(127..<142))
        #expect(text(b, r) == "www.example.com")
    }

    /// Every prefix: more data needed until the name is complete, then the same answer.
    @Test func everyPrefix() {
        let b = Self.openSSLHello
        for n in 0..<b.count {
            let r = sni(Array(b[0..<n]))
            #expect(r == (n >= 142 ? .found(127..<142) : .needMoreData), "prefix \(n)")
        }
    }

    @Test func synthetic() {
        let named = clientHello(extensions: [(10, [0, 2, 0, 29]), sniExtension("a.example.com")])
        #expect(text(named, sni(named)) == "a.example.com")
        #expect(sni(clientHello(extensions: [(10, [0, 2, 0, 29])])) == .notPresent)
        #expect(sni(clientHello(extensions: nil)) == .notPresent)
        #expect(sni(clientHello(extensions: [sniExtension("bad name")])) == .malformed)
        #expect(sni(clientHello(extensions: [sniExtension("a..b")])) == .malformed)
        #expect(sni(clientHello(extensions: [sniExtension("x", type: 1)])) == .notPresent)
        #expect(sni(clientHello(extensions: [], sessionID: 33)) == .malformed)
        // An extension claiming more bytes than the block holds.
        var over = clientHello(extensions: [sniExtension("a.example.com")])
        over[over.count - 13 - 2 - 1 - 2 - 2] = 0xFF  // the extension length's high byte
        #expect(sni(over) == .malformed)
        // Not TLS at all, or not a ClientHello.
        #expect(sni(Array("GET / HTTP/1.1\r\n".utf8)) == .notPresent)
        #expect(sni([22, 3, 3, 0, 4, 2, 0, 0, 0]) == .notPresent)
    }

    @Test func randomCorruptionStaysInBounds() {
        var rng = SplitMix(seed: 6066)
        let base = Self.openSSLHello
        for _ in 0..<3_000 {
            var b = base
            for _ in 0..<(1 + Int(rng.next() % 3)) { b[Int(rng.next() % 160)] = UInt8(truncatingIfNeeded: rng.next()) }
            if case .found(let r) = sni(b) { #expect(r.lowerBound >= 0 && r.upperBound <= b.count) }
        }
    }
}

@Suite struct HTTPRequestHostTests {
    @Test func findsHost() {
        let req = Array("GET /index.html HTTP/1.1\r\nUser-Agent: t\r\nHost:  Example.COM:8080 \r\nAccept: */*\r\n\r\n".utf8)
        let r = httpHost(req)
        #expect(text(req, r) == "example.com")
        let lf = Array("POST /x HTTP/1.0\nhost: api.example.org\n\n".utf8)
        #expect(text(lf, httpHost(lf)) == "api.example.org")
        let v6 = Array("GET / HTTP/1.1\r\nHost: [fd99::1]:80\r\n\r\n".utf8)
        #expect(text(v6, httpHost(v6)) == "[fd99::1]")
    }

    @Test func absentMalformedAndNotHTTP() {
        #expect(httpHost(Array("GET / HTTP/1.1\r\nAccept: */*\r\n\r\nHost: late.example\r\n".utf8)) == .notPresent)
        #expect(httpHost(Array("GET / HTTP/1.1\r\nHost: a b\r\n\r\n".utf8)) == .malformed)
        #expect(httpHost(Array("GET / HTTP/1.1\r\nHost: a.example:http\r\n\r\n".utf8)) == .malformed)
        #expect(httpHost(Array("SSH-2.0-OpenSSH_9.2\r\n".utf8)) == .notPresent)
        #expect(httpHost(Array("FOO / HTTP/1.1\r\n".utf8)) == .notPresent)
        #expect(httpHost(TLSClientHelloTests.openSSLHello) == .notPresent)
        let huge = Array("GET / HTTP/1.1\r\nX: ".utf8) + [UInt8](repeating: 97, count: 9000)
        #expect(httpHost(huge) == .malformed)
    }

    @Test func everyPrefix() {
        let req = Array("GET / HTTP/1.1\r\nHost: www.example.com\r\nAccept: */*\r\n\r\n".utf8)
        let hostLineEnd = 16 + "Host: www.example.com\r\n".utf8.count
        for n in 0..<req.count {
            let r = httpHost(Array(req[0..<n]))
            #expect(r == (n >= hostLineEnd ? .found(22..<37) : .needMoreData), "prefix \(n)")
        }
    }
}
