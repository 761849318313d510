import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Sends one request to the daemon's control socket and waits for the reply
/// (framing: `ControlWire`). Used by `tunnelctl`.
public struct ControlClient: Sendable {
    /// The control socket, normally `RuntimeDirectory/control.sock`.
    public var socketPath: String
    /// How long to wait for connect + send + reply altogether.
    public var timeout: Duration

    /// A client for the socket at `socketPath`.
    public init(socketPath: String, timeout: Duration = .seconds(5)) {
        self.socketPath = socketPath
        self.timeout = timeout
    }

    /// Sends `request` and returns the daemon's response (which may be `.error`).
    /// - Throws: `ControlClientError.daemonNotRunning` when there is no socket or nobody listening.
    public func send(_ request: ControlRequest) throws(ControlClientError) -> ControlResponse {
        let line = try exchange(ControlWire.encode(request))
        switch ControlWire.decodeResponse(line) {
        case .success(.error(let e)) where e.code == .permissionDenied:
            throw .permissionDenied(path: socketPath, message: e.message)
        case .success(let r): return r
        case .failure(let e): throw .badReply(e.message)
        }
    }

    /// Writes raw bytes and reads one reply line (without `\n`). Exposed for tests of malformed
    /// requests; normal callers use `send`.
    public func exchange(_ bytes: [UInt8]) throws(ControlClientError) -> [UInt8] {
        let deadline = SocketIO.nowMs() + SocketIO.ms(timeout)
        let fd: Int32
        do {
            fd = try SocketIO.connect(path: socketPath)
        } catch {
            switch error.errno {
            case ENOENT, ECONNREFUSED, ENOTDIR: throw .daemonNotRunning(path: socketPath)
            case EACCES, EPERM: throw .permissionDenied(path: socketPath, message: error.errnoText)
            default: throw .system(error)
            }
        }
        defer { Sys.close(fd) }
        let written: Bool
        do {
            written = try SocketIO.writeAll(fd, bytes, deadlineMs: deadline, path: socketPath)
        } catch where error.errno == EPIPE || error.errno == ECONNRESET {
            written = true  // the server may have answered (e.g. "too large") and closed; read it
        } catch {
            throw .system(error)
        }
        guard written else { throw .timedOut(path: socketPath, seconds: Double(SocketIO.ms(timeout)) / 1000) }
        try? Sys.shutdown(fd, Int32(SHUT_WR), socketPath)
        var reader = LineReader(fd: fd, limit: ControlWire.maxResponseBytes, name: socketPath)
        switch reader.readLine(deadlineMs: deadline) {
        case .success(let line): return line
        case .failure(.timedOut): throw .timedOut(path: socketPath, seconds: Double(SocketIO.ms(timeout)) / 1000)
        case .failure(.closed): throw .badReply("the daemon closed the connection without a reply")
        case .failure(.tooLong): throw .badReply("reply larger than \(ControlWire.maxResponseBytes) bytes")
        case .failure(.failed(let e)): throw .system(e)
        }
    }
}
