import Core
import Foundation
import Packet
import Testing
@testable import ControlProtocol
@testable import Daemon

#if canImport(Glibc)
import Glibc
#endif

/// Issue 13 item 8: `set=1` requests up to 64 MiB, parsed as they stream in.
@Suite(.serialized) struct UAPILargeSetTests {
    func withServer(_ body: (String, Locked<[UAPISetRequest]>, Locked<[UAPIError]>) throws -> Void) throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let got = Locked<[UAPISetRequest]>([])
        let errors = Locked<[UAPIError]>([])
        let server = try UAPIServer(
            interfaceName: "tv0", directory: dir + "/run/wireguard", get: { sampleDevice },
            set: { r in
                got.mutate { $0.append(r) }
                return nil
            }, log: { e in errors.mutate { $0.append(e) } })
        defer { server.stop() }
        try body(server.path, got, errors)
    }

    /// Writes `chunks()` until it returns nil, then reads reply lines until `errno=` + blank.
    func send(_ path: String, reads: Int = 1, _ chunks: () -> [UInt8]?) throws -> (replies: [String], closed: Bool) {
        let fd = try SocketIO.connect(path: path)
        defer { close(fd) }
        var writeFailed = false
        while let c = chunks() {
            let ok = (try? SocketIO.writeAll(fd, c, deadlineMs: SocketIO.nowMs() + 20_000, path: path)) ?? false
            if !ok { writeFailed = true; break }
        }
        var reader = LineReader(fd: fd, limit: 1 << 20)
        var replies: [String] = []
        for _ in 0..<reads {
            while case .success(let l) = reader.readLine(deadlineMs: SocketIO.nowMs() + 20_000) {
                let s = String(decoding: l, as: UTF8.self)
                if s.hasPrefix("errno=") { replies.append(s) }
                if s.isEmpty && !replies.isEmpty { break }
            }
        }
        shutdown(fd, Int32(SHUT_WR))
        var one: UInt8 = 0
        let closed = writeFailed || recv(fd, &one, 1, 0) == 0
        return (replies, closed)
    }

    /// 100,000 `allowed_ip=` lines for one peer (about 2.6 MB, over the old 1 MiB limit) are
    /// accepted and handed to `set` whole; the connection keeps serving.
    @Test func aPeerWithAHundredThousandAllowedIPs() throws {
        try withServer { path, got, errors in
            var text = "set=1\npublic_key=\(key(1).hex)\nreplace_allowed_ips=true\n"
            for i in 0..<100_000 { text += "allowed_ip=10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)/32\n" }
            text += "\nget=1\n\n"
            #expect(text.utf8.count > 1 << 20)
            var sent = false
            let r = try send(path, reads: 2) {
                defer { sent = true }
                return sent ? nil : Array(text.utf8)
            }
            #expect(r.replies == ["errno=0", "errno=0"], "\(errors.get())")
            let requests = got.get()
            try #require(requests.count == 1)
            #expect(requests[0].peers.count == 1)
            #expect(requests[0].peers[0].allowedIPs.count == 100_000)
            #expect(requests[0].peers[0].allowedIPs.last == IPPrefix("10.1.134.159/32"))
        }
    }

    /// Over 64 MiB: `errno=-EMSGSIZE` (wg prints "Message too long"), nothing applied, the
    /// connection closed; the server's memory does not grow by the request's size.
    @Test func overSixtyFourMiBIsRefusedWithEMSGSIZE() throws {
        try withServer { path, got, errors in
            let hwm0 = Self.highWaterMarkKiB()
            // A valid start, then long (valid-looking) lines: sent in 1 MiB chunks, never held whole.
            let line = Array(("allowed_ip=10.0.0.1/32" + String(repeating: " ", count: 4000) + "\n").utf8)
            var chunk: [UInt8] = []
            while chunk.count < 1 << 20 { chunk += line }
            var sentBytes = 0
            let head = Array("set=1\npublic_key=\(key(1).hex)\n".utf8)
            let r = try send(path) {
                if sentBytes == 0 { sentBytes += head.count; return head }
                guard sentBytes <= UAPIServer.maxOperationBytes + (2 << 20) else { return nil }
                sentBytes += chunk.count
                return chunk
            }
            #expect(r.replies == ["errno=-\(EMSGSIZE)"])
            #expect(r.closed)
            #expect(got.get().isEmpty)
            #expect(errors.get().map(\.message) == ["set operation larger than \(UAPIServer.maxOperationBytes) bytes"])
            let growth = Self.highWaterMarkKiB() - hwm0
            #expect(growth < 32 * 1024, "peak memory grew by \(growth) KiB while reading a 64 MiB request")
        }
    }

    /// A single line longer than 4096 bytes is refused the same way (it is never buffered whole).
    @Test func anOverlongLineIsRefused() throws {
        try withServer { path, got, errors in
            var sent = false
            let text = "set=1\nallowed_ip=" + String(repeating: "1", count: 10_000) + "\n\n"
            let r = try send(path) {
                defer { sent = true }
                return sent ? nil : Array(text.utf8)
            }
            #expect(r.replies == ["errno=-\(EMSGSIZE)"])
            #expect(got.get().isEmpty)
            #expect(errors.get().map(\.message) == ["set line longer than 4096 bytes"])
        }
    }

    /// A bad line in the middle of a big request: the rest is read (not parsed), the error is
    /// answered, nothing is applied, and the connection stays usable.
    @Test func aBadLineMidStreamChangesNothingAndKeepsTheConnection() throws {
        try withServer { path, got, _ in
            var text = "set=1\npublic_key=\(key(1).hex)\n"
            for i in 0..<5000 { text += "allowed_ip=10.0.\(i >> 8 & 255).\(i & 255)/32\n" }
            text += "allowed_ip=banana\n"
            for i in 0..<5000 { text += "allowed_ip=10.1.\(i >> 8 & 255).\(i & 255)/32\n" }
            text += "\nget=1\n\n"
            var sent = false
            let r = try send(path, reads: 2) {
                defer { sent = true }
                return sent ? nil : Array(text.utf8)
            }
            #expect(r.replies == ["errno=-\(EINVAL)", "errno=0"])
            #expect(got.get().isEmpty)
        }
    }

    /// The streaming parser agrees with `parseSet` line for line.
    @Test func parserMatchesParseSet() throws {
        let lines = ["private_key=\(key(9).hex)", "listen_port=51820", "public_key=\(key(1).hex)", "allowed_ip=10.0.0.0/8",
                     "public_key=\(key(2).hex)", "remove=true"]
        var p = UAPISetParser()
        for l in lines { try p.feed(l) }
        #expect(p.finish() == (try UAPICodec.parseSet(lines)))
    }

    /// VmHWM of this process (peak resident set), KiB.
    static func highWaterMarkKiB() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}
