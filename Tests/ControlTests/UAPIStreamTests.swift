import Core
import Packet
import Testing
@testable import ControlProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The UAPI connection state machine with no socket: every way of cutting the input gives the
/// same operations as the whole input.
@Suite struct UAPIStreamTests {
    static let get = "get=1\n\n"
    static let set = "set=1\nlisten_port=5\npublic_key=\(key(2).hex)\nendpoint=127.0.0.1:1234\nallowed_ip=10.0.0.0/8\n\n"

    static func stream() -> UAPIStream { UAPIStream(maxOperationBytes: 1 << 20, maxLineBytes: 4096) }

    /// Feeds `pieces` in turn, collecting every event (all of them, as a server that wrote each
    /// reply at once would).
    static func events(_ pieces: [ArraySlice<UInt8>], into s: inout UAPIStream) -> [UAPIStream.Event] {
        var out: [UAPIStream.Event] = []
        for p in pieces {
            s.append(p)
            while let e = s.next() { out.append(e) }
        }
        return out
    }

    static func events(_ pieces: [ArraySlice<UInt8>]) -> [UAPIStream.Event] {
        var s = stream()
        return events(pieces, into: &s)
    }

    static var expectedSet: UAPISetRequest {
        var r = UAPISetRequest()
        r.listenPort = 5
        var p = UAPIPeerUpdate(publicKey: key(2))
        p.endpoint = HostPort("127.0.0.1:1234")
        p.allowedIPs = [IPPrefix("10.0.0.0/8")!]
        r.peers = [p]
        return r
    }

    @Test func wholeOperations() {
        #expect(Self.events([Array(Self.get.utf8)[...]]) == [.get])
        #expect(Self.events([Array(Self.set.utf8)[...]]) == [.set(Self.expectedSet)])
        #expect(Self.events([Array((Self.set + Self.get + Self.set).utf8)[...]]) == [.set(Self.expectedSet), .get, .set(Self.expectedSet)])
    }

    @Test func everySplitPointOfAGetAndASet() {
        for text in [Self.get, Self.set, Self.get + Self.set] {
            let bytes = Array(text.utf8)
            let whole = Self.events([bytes[...]])
            #expect(!whole.isEmpty)
            for cut in 0...bytes.count {
                #expect(Self.events([bytes[..<cut], bytes[cut...]]) == whole, "cut at \(cut) of \(text.debugDescription)")
            }
        }
    }

    @Test func byteByByte() {
        let bytes = Array((Self.get + Self.set + Self.get).utf8)
        var s = Self.stream()
        var out: [UAPIStream.Event] = []
        for (i, b) in bytes.enumerated() {
            s.append([b])
            while let e = s.next() { out.append(e) }
            // Nothing before the blank line that ends an operation.
            if i == 5 { #expect(out.isEmpty) }
            if i == 6 { #expect(out == [.get]) }
        }
        #expect(out == [.get, .set(Self.expectedSet), .get])
    }

    @Test func everyTruncationWaitsAndNeverApplies() {
        let bytes = Array(Self.set.utf8)
        for n in 0..<bytes.count {
            #expect(Self.events([bytes[..<n]]).isEmpty, "prefix \(n)")
        }
    }

    @Test func errorsAndClosing() {
        #expect(Self.events([Array("get=1\nx\nget=1\n\n".utf8)[...]]) == [.failed(.invalid("trailing data after get=1")), .get])
        #expect(Self.events([Array("set=1\nnonsense\nlisten_port=1\n\nget=1\n\n".utf8)[...]])
            == [.failed(.protocolError("line 'nonsense' is not key=value")), .get])
        var s = Self.stream()
        #expect(Self.events([Array("delete=1\n\nget=1\n\n".utf8)[...]], into: &s) == [.close])
        #expect(s.isClosed)
        #expect(Self.events([Array("\nget=1\n\n".utf8)[...]]) == [.close])
    }

    @Test func limits() {
        var s = UAPIStream(maxOperationBytes: 100, maxLineBytes: 20)
        let long = "set=1\n" + String(repeating: "x", count: 21)
        #expect(Self.events([Array(long.utf8)[...]], into: &s) == [.tooLarge(UAPIError(errno: EMSGSIZE, message: "set line longer than 20 bytes"))])
        #expect(s.isClosed && s.buffered == 0)
        // An overlong operation line is not the protocol: closed without a reply.
        #expect(Self.events([Array(String(repeating: "g", count: 30).utf8)[...]]) .isEmpty)
        s = UAPIStream(maxOperationBytes: 100, maxLineBytes: 20)
        #expect(Self.events([Array(String(repeating: "g", count: 30).utf8)[...]], into: &s) == [.close])
        s = UAPIStream(maxOperationBytes: 100, maxLineBytes: 20)
        let many = "set=1\n" + String(repeating: "listen_port=1\n", count: 8)
        #expect(Self.events([Array(many.utf8)[...]], into: &s) == [.tooLarge(UAPIError(errno: EMSGSIZE, message: "set operation larger than 100 bytes"))])
    }

    /// 100,000 `allowed_ip` lines fed in uneven pieces: one request, the buffer never holding
    /// more than a line plus a piece, and `progress` moving every 1024 lines.
    @Test func aLargeSetStreamedInPieces() {
        var text = "set=1\npublic_key=\(key(1).hex)\nreplace_allowed_ips=true\n"
        for i in 0..<100_000 { text += "allowed_ip=10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)/32\n" }
        text += "\n"
        let bytes = Array(text.utf8)
        var s = UAPIStream(maxOperationBytes: 64 << 20, maxLineBytes: 4096)
        var out: [UAPIStream.Event] = []
        var offset = 0
        var size = 1
        var peak = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + size)
            s.append(bytes[offset..<end])
            peak = max(peak, s.buffered)
            while let e = s.next() { out.append(e) }
            offset = end
            size = size * 7 % 65521 + 1
        }
        try? #require(out.count == 1)
        guard case .set(let r)? = out.first else { Issue.record("not a set: \(out)"); return }
        #expect(r.peers.count == 1 && r.peers[0].allowedIPs.count == 100_000)
        #expect(r.peers[0].allowedIPs.last == IPPrefix("10.1.134.159/32"))
        #expect(s.progress == UInt64(100_002 / 1024))
        #expect(peak <= 65521 + 4096)
    }
}
