import Core
import Foundation
import Packet
import Testing
@testable import ControlProtocol
@testable import Daemon

#if canImport(Glibc)
import Glibc
#endif

/// The UAPI server spoken to directly over a socket in a temporary directory (no root needed).
@Suite struct UAPIServerTests {
    let errorsLogged = Locked<[UAPIError]>([])

    /// Sends `text` on one connection and returns the reply lines up to and including the blank
    /// line after each `errno=` line, for `operations` operations.
    func converse(_ path: String, _ text: String, operations: Int = 1) throws -> [String] {
        let fd = try SocketIO.connect(path: path)
        defer { close(fd) }
        let deadline = SocketIO.nowMs() + 5000
        #expect(try SocketIO.writeAll(fd, Array(text.utf8), deadlineMs: deadline, path: path))
        shutdown(fd, Int32(SHUT_WR))  // EOF after the input, as a closing client does
        var reader = LineReader(fd: fd, limit: 1 << 20)
        var lines: [String] = []
        var done = 0
        while done < operations {
            guard case .success(let l) = reader.readLine(deadlineMs: deadline) else { break }
            let s = String(decoding: l, as: UTF8.self)
            lines.append(s)
            if s.isEmpty, lines.count >= 2, lines[lines.count - 2].hasPrefix("errno=") { done += 1 }
        }
        return lines
    }

    func withServer(_ body: (String, String, Locked<[UAPISetRequest]>) throws -> Void) throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let sockDir = dir + "/run/wireguard"
        let got = Locked<[UAPISetRequest]>([])
        let server = try UAPIServer(
            interfaceName: "tv0", directory: sockDir, get: { sampleDevice },
            set: { r in
                got.mutate { $0.append(r) }
                return r.listenPort == 1 ? .portInUse("port 1 is taken") : nil
            }, log: { e in errorsLogged.mutate { $0.append(e) } })
        defer { server.stop() }
        try body(sockDir, server.path, got)
    }

    @Test func createsTheDirectory0755AndTheSocket0600() throws {
        try withServer { (dir: String, path: String, _) throws in
            var st = stat()
            #expect(stat(dir, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o755)
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & S_IFMT == S_IFSOCK)
            #expect(st.st_mode & 0o777 == 0o600)
            #expect(path == dir + "/tv0.sock")
        }
    }

    @Test func getReturnsTheSnapshotAndErrnoZero() throws {
        try withServer { (_, path: String, _) throws in
            let lines = try converse(path, "get=1\n\n")
            let expected = (UAPICodec.encodeGet(sampleDevice) + "errno=0\n").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines == expected)
        }
    }

    @Test func severalOperationsOnOneConnection() throws {
        try withServer { (_, path: String, got) throws in
            let lines = try converse(path, "set=1\nlisten_port=5\n\nget=1\n\nset=1\nlisten_port=1\n\n", operations: 3)
            #expect(lines.first == "errno=0")
            #expect(lines.contains("listen_port=51820"))
            #expect(lines.suffix(2) == ["errno=-\(EADDRINUSE)", ""])
            #expect(got.get().map(\.listenPort) == [5, 1])
        }
    }

    @Test func malformedSetIsRefusedWithoutCallingTheHandler() throws {
        try withServer { (_, path: String, got) throws in
            #expect(try converse(path, "set=1\nlisten_port=99999\n\n") == ["errno=-\(EINVAL)", ""])
            #expect(try converse(path, "set=1\nnonsense\n\n") == ["errno=-\(EPROTO)", ""])
            #expect(try converse(path, "set=1\npublic_key=\(key(2).hex)\nendpoint=host:1\n\n") == ["errno=-\(EINVAL)", ""])
            #expect(got.get().isEmpty)
            #expect(errorsLogged.get().map(\.errno) == [EINVAL, EPROTO, EINVAL])
            #expect(errorsLogged.get().last?.message == "endpoint: 'host:1' is not IP:port or [IPv6]:port")
        }
    }

    @Test func getWithTrailingDataIsInvalid() throws {
        try withServer { (_, path: String, _) throws in
            #expect(try converse(path, "get=1\nx\n") == ["errno=-\(EINVAL)", ""])
        }
    }

    @Test func unknownOperationClosesTheConnection() throws {
        try withServer { (_, path: String, _) throws in
            #expect(try converse(path, "delete=1\n\n").isEmpty)
            // Still serving.
            #expect(try converse(path, "get=1\n\n").last == "")
        }
    }

    @Test func truncatedSetIsIgnored() throws {
        try withServer { (_, path: String, got) throws in
            let full = "set=1\npublic_key=\(key(2).hex)\nendpoint=127.0.0.1:1234\n\n"
            for n in stride(from: 0, to: full.utf8.count - 1, by: 7) {
                _ = try converse(path, String(full.prefix(n)))
            }
            #expect(got.get().isEmpty, "an operation without its blank line is never applied")
        }
    }

    @Test func badInterfaceNames() {
        for name in ["", "a/b", "sixteen-chars-xx", "..", "."] {
            #expect(throws: SocketError.self, "\(name)") {
                try UAPIServer(interfaceName: name, directory: "/tmp", get: { sampleDevice }, set: { _ in nil })
            }
        }
    }
}
