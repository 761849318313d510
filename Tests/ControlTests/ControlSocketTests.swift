import Core
import Foundation
import Runtime
import Testing
@testable import ControlProtocol
@testable import Daemon

#if canImport(Glibc)
import Glibc
#endif

/// Client and server over a socket in a temporary directory; no root needed.
@Suite struct ControlSocketTests {
    let logged = LogCapture()

    /// A server answering status with `sampleStatus` and kick per name; records what it saw.
    func withServer(
        group: UInt32? = nil, handler: ControlServer.Handler? = nil,
        _ body: (String, Locked<[(ControlRequest, PeerCredentials)]>) throws -> Void
    ) throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let path = dir + "/control.sock"
        let seen = Locked<[(ControlRequest, PeerCredentials)]>([])
        let server = try ControlServer(path: path, group: group, log: logged.logger) { request, creds in
            seen.mutate { $0.append((request, creds)) }
            if let handler { return handler(request, creds) }
            switch request {
            case .status: return .status(sampleStatus)
            case .kick(let peer) where peer == "alice": return .kick(KickReply(peer: peer, endedSession: true))
            case .kick(let peer): return .failure(.notFound, "no peer named '\(peer)'")
            default: return .failure(.failed, "not in this test")
            }
        }
        defer { server.stop() }
        try body(path, seen)
    }

    @Test func statusRoundTripWithCallerCredentials() throws {
        try withServer { (path: String, seen) throws in
            let r = try ControlClient(socketPath: path).send(.status)
            #expect(r == .status(sampleStatus))
            let s = seen.get()
            try #require(s.count == 1)
            #expect(s[0].0 == .status)
            #expect(s[0].1.uid == UInt32(geteuid()))
            #expect(s[0].1.pid == getpid())
        }
    }

    @Test func kickAndNotFound() throws {
        try withServer { (path: String, _) throws in
            let c = ControlClient(socketPath: path)
            #expect(try c.send(.kick(peer: "alice")) == .kick(KickReply(peer: "alice", endedSession: true)))
            #expect(try c.send(.kick(peer: "carol")) == .failure(.notFound, "no peer named 'carol'"))
        }
    }

    @Test func socketIsMode0600() throws {
        try withServer { (path: String, _) throws in
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & S_IFMT == S_IFSOCK)
            #expect(st.st_mode & 0o777 == 0o600)
        }
    }

    @Test func socketWithGroupIsMode0660() throws {
        let gid = UInt32(getegid())
        try withServer(group: gid) { (path: String, _) throws in
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o660)
            #expect(st.st_gid == gid)
        }
    }

    @Test func unknownRequestGetsATypedErrorAndSkipsTheHandler() throws {
        try withServer { (path: String, seen) throws in
            let line = try ControlClient(socketPath: path).exchange(Array(#"{"version":1,"type":"explain","peer":"x"}"#.utf8) + [10])
            let r = try ControlWire.decodeResponse(line).get()
            guard case .error(let e) = r else { Issue.record("got \(r)"); return }
            #expect(e.code == .unknownRequest)
            #expect(e.message == "unknown request 'explain'; this daemon knows status, peers, policyReload, policyShow, kick")
            #expect(seen.get().isEmpty)
        }
    }

    @Test func malformedJSONGetsAnErrorAndTheServerKeepsServing() throws {
        try withServer { (path: String, _) throws in
            let c = ControlClient(socketPath: path)
            for junk in ["{", "null", "\u{0}\u{1}garbage", "{\"version\":1,\"type\":\"kick\"}"] {
                let line = try c.exchange(Array(junk.utf8) + [10])
                guard case .error(let e) = try ControlWire.decodeResponse(line).get() else {
                    Issue.record("no error for \(junk)")
                    continue
                }
                #expect(e.code == .malformedRequest)
            }
            #expect(try c.send(.status) == .status(sampleStatus))
        }
    }

    @Test func requestWithoutNewlineBeforeEOF() throws {
        try withServer { (path: String, _) throws in
            let line = try ControlClient(socketPath: path).exchange(Array(#"{"version":1,"type":"status"}"#.utf8))
            #expect(try ControlWire.decodeResponse(line).get() == .failure(.malformedRequest, "request not terminated by a newline"))
        }
    }

    @Test func oversizedRequestIsRefused() throws {
        try withServer { (path: String, seen) throws in
            let big = [UInt8](repeating: UInt8(ascii: "x"), count: ControlWire.maxRequestBytes + 10) + [10]
            let line = try ControlClient(socketPath: path).exchange(big)
            guard case .error(let e) = try ControlWire.decodeResponse(line).get() else { Issue.record("no error"); return }
            #expect(e.code == .requestTooLarge)
            #expect(seen.get().isEmpty)
            #expect(try ControlClient(socketPath: path).send(.status) == .status(sampleStatus))
        }
    }

    @Test func slowDaemonTimesOut() throws {
        try withServer(handler: { _, _ in
            usleep(600_000)
            return .status(sampleStatus)
        }) { (path: String, _) throws in
            let e = #expect(throws: ControlClientError.self) { try ControlClient(socketPath: path, timeout: .milliseconds(100)).send(.status) }
            guard case .timedOut = e else { Issue.record("got \(String(describing: e))"); return }
        }
    }

    @Test func missingSocketMeansDaemonNotRunning() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        for path in [dir + "/control.sock", "/nonexistent-dir-\(getpid())/control.sock"] {
            let e = #expect(throws: ControlClientError.self) { try ControlClient(socketPath: path).send(.status) }
            #expect(e == .daemonNotRunning(path: path))
            #expect(e?.description.hasPrefix("tunneld is not running (no daemon listening on \(path))") == true)
        }
    }

    @Test func staleSocketMeansDaemonNotRunningAndIsReplacedByANewServer() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let path = dir + "/control.sock"
        let fd = try SocketIO.listen(path: path, mode: 0o600, gid: nil)
        close(fd)  // the file stays: a daemon that died
        let e = #expect(throws: ControlClientError.self) { try ControlClient(socketPath: path).send(.status) }
        #expect(e == .daemonNotRunning(path: path))
        let server = try ControlServer(path: path) { _, _ in .status(sampleStatus) }
        defer { server.stop() }
        #expect(try ControlClient(socketPath: path).send(.status) == .status(sampleStatus))
    }

    @Test func aLiveSocketIsNotStolen() throws {
        try withServer { (path: String, _) throws in
            let e = #expect(throws: SocketError.self) { try ControlServer(path: path) { _, _ in .status(sampleStatus) } }
            #expect(e == .inUse(path: path))
            #expect(e?.description == "bind \(path): Address already in use (another process is listening on it; is tunneld already running?)")
            #expect(try ControlClient(socketPath: path).send(.status) == .status(sampleStatus))
        }
    }

    @Test func aRegularFileInTheWayIsNotRemoved() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let path = dir + "/control.sock"
        writeFile(path, "precious")
        let e = #expect(throws: SocketError.self) { try ControlServer(path: path) { _, _ in .status(sampleStatus) } }
        #expect(e == .notASocket(path: path))
        #expect((try? String(contentsOfFile: path, encoding: .utf8)) == "precious")
    }

    @Test func stopRemovesTheSocket() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let path = dir + "/control.sock"
        let server = try ControlServer(path: path) { _, _ in .status(sampleStatus) }
        server.stop()
        server.stop()
        #expect(access(path, F_OK) != 0)
        #expect(throws: ControlClientError.daemonNotRunning(path: path)) { try ControlClient(socketPath: path).send(.status) }
    }

    @Test func tooLongAPath() {
        let path = "/tmp/" + String(repeating: "x", count: 120)
        let e = #expect(throws: SocketError.self) { try ControlServer(path: path) { _, _ in .status(sampleStatus) } }
        #expect(e == .pathTooLong(path: path))
    }

    @Test func groupLookup() {
        #expect(ControlServer.groupID(named: "root") == 0)
        #expect(ControlServer.groupID(named: "no-such-group-\(getpid())") == nil)
    }

    @Test func authorization() {
        let me: UInt32 = 1000
        #expect(ControlServer.isAuthorized(PeerCredentials(pid: 1, uid: 0, gid: 0), ownUID: me, group: nil))
        #expect(ControlServer.isAuthorized(PeerCredentials(pid: 1, uid: me, gid: 5), ownUID: me, group: nil))
        #expect(!ControlServer.isAuthorized(PeerCredentials(pid: 1, uid: 1001, gid: 1001), ownUID: me, group: nil))
        #expect(ControlServer.isAuthorized(PeerCredentials(pid: 1, uid: 1001, gid: 77), ownUID: me, group: 77))
        #expect(!ControlServer.isAuthorized(PeerCredentials(pid: 1, uid: 1001, gid: 78), ownUID: me, group: 77))
    }

    /// As root: a process running as another uid gets `permissionDenied`.
    @Test(.enabled(if: isRoot && access("/usr/bin/setpriv", X_OK) == 0 && access("/usr/bin/python3", X_OK) == 0, "needs root, setpriv and python3")) func otherUsersAreRefused() throws {
        try withServer { (path: String, seen) throws in
            chmod(path, 0o666)  // so only SO_PEERCRED stands in the way
            chmod((path as NSString).deletingLastPathComponent, 0o755)
            let (status, out, err) = try run("/usr/bin/setpriv", [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                "import socket;s=socket.socket(socket.AF_UNIX);s.connect('\(path)');s.sendall(b'{\"version\":1,\"type\":\"status\"}\\n');print(s.recv(4096).decode())",
            ])
            #expect(status == 0, "stderr: \(err)")
            #expect(out.contains(#""code":"permissionDenied""#), "got: \(out)")
            #expect(out.contains("uid 65534 may not use the control socket"))
            #expect(seen.get().isEmpty)
            #expect(logged.all.count == 1)
            #expect(logged.all.first?.hasPrefix("<4>control.sock: refused uid 65534 (pid ") == true)
        }
    }
}
