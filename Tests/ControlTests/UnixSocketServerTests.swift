import Core
import Foundation
import Packet
import Testing
@testable import ControlProtocol
@testable import Daemon

#if canImport(Glibc)
import Glibc
#endif

/// The control socket and UAPI served by one `UnixSocketServer` on one thread.
@Suite(.serialized) struct UnixSocketServerTests {
    struct Served {
        let server: UnixSocketServer
        let control: String
        let uapi: String
        let sets: Locked<[UAPISetRequest]>
        let errors: Locked<[UAPIError]>
        /// The threads that ran a handler (either socket's).
        let threads: Locked<Set<UInt64>>
    }

    func withServer(uapiTimeout: Duration = .seconds(5), _ body: (Served) throws -> Void) throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let sets = Locked<[UAPISetRequest]>([])
        let errors = Locked<[UAPIError]>([])
        let threads = Locked<Set<UInt64>>([])
        let server = try UnixSocketServer(endpoints: [
            ControlServer.endpoint(path: dir + "/control.sock") { _, _ in
                threads.mutate { _ = $0.insert(UInt64(pthread_self())) }
                return .status(sampleStatus)
            },
            UAPIServer.endpoint(interfaceName: "tv0", directory: dir + "/wireguard", ioTimeout: uapiTimeout,
                                get: { threads.mutate { _ = $0.insert(UInt64(pthread_self())) }; return sampleDevice },
                                set: { r in
                                    threads.mutate { _ = $0.insert(UInt64(pthread_self())) }
                                    sets.mutate { $0.append(r) }
                                    return nil
                                },
                                log: { e in errors.mutate { $0.append(e) } }),
        ])
        defer { server.stop() }
        try body(Served(server: server, control: dir + "/control.sock", uapi: dir + "/wireguard/tv0.sock", sets: sets, errors: errors,
                         threads: threads))
        server.stop()
        #expect(access(dir + "/control.sock", F_OK) != 0 && access(dir + "/wireguard/tv0.sock", F_OK) != 0)
    }

    /// Reads reply lines until `errno=…` and its blank line; nil on close or timeout.
    func readStatus(_ reader: inout LineReader, ms: Int64 = 5000) -> [String]? {
        var lines: [String] = []
        while case .success(let l) = reader.readLine(deadlineMs: SocketIO.nowMs() + ms) {
            lines.append(String(decoding: l, as: UTF8.self))
            if l.isEmpty, lines.count >= 2, lines[lines.count - 2].hasPrefix("errno=") { return lines }
        }
        return nil
    }

    @Test func bothSocketsServedByOneThread() throws {
        try withServer { s in
            var st = stat()
            #expect(stat(s.control, &st) == 0 && st.st_mode & 0o777 == 0o600)
            #expect(stat(s.uapi, &st) == 0 && st.st_mode & 0o777 == 0o600)
            // A UAPI connection left open mid-operation and a control client at once.
            let u = try SocketIO.connect(path: s.uapi)
            defer { close(u) }
            #expect(try SocketIO.writeAll(u, Array("get=1\n\nset=1\nlisten_port=7\n".utf8), deadlineMs: SocketIO.nowMs() + 2000, path: s.uapi))
            var reader = LineReader(fd: u, limit: 1 << 20)
            #expect(readStatus(&reader)?.last(where: { $0.hasPrefix("errno=") }) == "errno=0")
            for _ in 0..<5 {
                #expect(try ControlClient(socketPath: s.control, timeout: .seconds(2)).send(.status) == .status(sampleStatus))
            }
            #expect(try SocketIO.writeAll(u, Array("\n".utf8), deadlineMs: SocketIO.nowMs() + 2000, path: s.uapi))
            #expect(readStatus(&reader) == ["errno=0", ""])
            #expect(s.sets.get().map(\.listenPort) == [7])
            #expect(s.server.stats(0).served == 5)
            #expect(s.server.stats(path: s.uapi)?.accepted == 1)
            // Every handler of both sockets ran on the loop's one thread.
            #expect(s.threads.get().count == 1)
            #expect(s.threads.get().first == s.server.loopThreadID)
        }
    }

    /// A UAPI client that starts a `set=1` and never ends it is closed at its deadline without a
    /// reply and without the set applied; the control socket answers meanwhile.
    @Test func aSlowUAPIClientIsClosedAtItsDeadline() throws {
        try withServer(uapiTimeout: .milliseconds(400)) { s in
            let u = try SocketIO.connect(path: s.uapi)
            defer { close(u) }
            let t0 = Date()
            #expect(try SocketIO.writeAll(u, Array("set=1\nlisten_port=9\n".utf8), deadlineMs: SocketIO.nowMs() + 2000, path: s.uapi))
            #expect(try ControlClient(socketPath: s.control, timeout: .seconds(2)).send(.status) == .status(sampleStatus))
            #expect(Date().timeIntervalSince(t0) < 0.3)
            // A byte now and then does not keep it alive (the deadline is per operation).
            for _ in 0..<3 {
                usleep(100_000)
                _ = Array("l".utf8).withUnsafeBytes { send(u, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
            }
            var one: UInt8 = 0
            var pfd = pollfd(fd: u, events: Int16(POLLIN), revents: 0)
            #expect(poll(&pfd, 1, 2000) == 1)
            #expect(recv(u, &one, 1, 0) == 0, "closed without a reply")
            let waited = Date().timeIntervalSince(t0)
            #expect(waited >= 0.35 && waited < 1.5, "waited \(waited) s")
            #expect(s.sets.get().isEmpty)
            #expect(s.server.stats(1).timedOut == 1)
        }
    }

    /// A big `set=1` sent in pieces with pauses takes longer than the deadline in all, but keeps
    /// it while it keeps arriving; it is applied whole.
    @Test func aLargeSetStreamedInPiecesOutlivesTheDeadline() throws {
        try withServer(uapiTimeout: .milliseconds(500)) { s in
            var text = "set=1\npublic_key=\(key(1).hex)\nreplace_allowed_ips=true\n"
            for i in 0..<60_000 { text += "allowed_ip=10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)/32\n" }
            text += "\nget=1\n\n"
            let bytes = Array(text.utf8)
            let u = try SocketIO.connect(path: s.uapi)
            defer { close(u) }
            let t0 = Date()
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + 48 * 1024)  // about 2000 lines a piece
                #expect(try SocketIO.writeAll(u, Array(bytes[offset..<end]), deadlineMs: SocketIO.nowMs() + 5000, path: s.uapi))
                offset = end
                usleep(40_000)
            }
            #expect(Date().timeIntervalSince(t0) > 0.8)
            var reader = LineReader(fd: u, limit: 1 << 20)
            #expect(readStatus(&reader) == ["errno=0", ""])
            #expect(readStatus(&reader)?.suffix(2) == ["errno=0", ""])
            #expect(s.sets.get().first?.peers.first?.allowedIPs.count == 60_000)
            #expect(s.errors.get().isEmpty)
        }
    }

    /// Many operations sent ahead in one write are answered in order, one reply at a time.
    @Test func operationsSentAheadAreAnsweredInOrder() throws {
        try withServer { s in
            let u = try SocketIO.connect(path: s.uapi)
            defer { close(u) }
            let ops = String(repeating: "set=1\nlisten_port=3\n\nget=1\n\n", count: 2000)
            #expect(try SocketIO.writeAll(u, Array(ops.utf8), deadlineMs: SocketIO.nowMs() + 10_000, path: s.uapi))
            shutdown(u, Int32(SHUT_WR))
            var reader = LineReader(fd: u, limit: 1 << 30)
            var replies = 0
            while let r = readStatus(&reader) {
                #expect(r.suffix(2) == ["errno=0", ""])
                replies += 1
            }
            #expect(replies == 4000)
            #expect(s.sets.get().count == 2000)
        }
    }
}
