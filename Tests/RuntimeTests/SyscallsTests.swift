import Core
import Glibc
import Runtime
import Testing

@Suite struct SyscallsTests {
    @Test func retriesEINTR() throws {
        var calls = 0
        let r = try Sys.call("test") { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(r == 7)
        #expect(calls == 3)
    }

    @Test func wouldBlockIsNil() throws {
        var calls = 0
        let r = try Sys.callNonblocking("test") { () -> Int in
            calls += 1
            errno = calls == 1 ? EINTR : EAGAIN
            return -1
        }
        #expect(r == nil)
        #expect(calls == 2)
        #expect(try Sys.shimNonblocking("test") { -EWOULDBLOCK } == nil)
        #expect(try Sys.shim("test") { 5 } == 5)
    }

    @Test func failuresThrowWithCallAndErrnoText() {
        #expect(throws: SystemError("open(/nonexistent)", errno: ENOENT)) {
            _ = try Sys.call("open(/nonexistent)") { open("/nonexistent/tunnelvision", O_RDONLY) }
        }
        do {
            _ = try Sys.shim("netlink: add address fd99::1/64 on tv0") { -EEXIST }
            Issue.record("did not throw")
        } catch {
            #expect(error.description == "netlink: add address fd99::1/64 on tv0: File exists (EEXIST)")
        }
        #expect(SystemError("x", errno: EPERM).description == "x: Operation not permitted (EPERM)")
        #expect(SystemError.name(9999) == "errno 9999")
    }

    @Test func nonblockingReadOfEmptyPipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        #expect(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var buffer = [UInt8](repeating: 0, count: 8)
        let empty = try buffer.withUnsafeMutableBytes { try Sys.readNonblocking(fds[0], $0, "pipe") }
        #expect(empty == nil)
        _ = try [UInt8]([1, 2, 3]).withUnsafeBytes { try Sys.writeNonblocking(fds[1], $0, "pipe") }
        let got = try buffer.withUnsafeMutableBytes { try Sys.readNonblocking(fds[0], $0, "pipe") }
        #expect(got == 3)
        #expect(buffer.prefix(3) == [1, 2, 3])
    }

    @Test func eventNotifierWakesWaiters() throws {
        let shutdown = try EventNotifier()
        let work = try EventNotifier()
        #expect(try Readiness.wait((work.descriptor, nil), shutdown, timeoutMilliseconds: 0) == .timedOut)
        work.signal()
        work.signal()
        #expect(work.isSignalled)
        #expect(try Readiness.wait((work.descriptor, nil), shutdown, timeoutMilliseconds: 0) == .readable)
        #expect(work.drain())
        #expect(!work.drain())
        #expect(try Readiness.wait((work.descriptor, nil), shutdown, timeoutMilliseconds: 0) == .timedOut)
        work.signal()
        shutdown.signal()
        #expect(try Readiness.wait((work.descriptor, nil), shutdown, timeoutMilliseconds: 0) == .closed)
    }
}
