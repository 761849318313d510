import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Reads newline-terminated lines from a socket with a byte limit and a deadline. Used by both
/// servers and the client; never reads past what it was asked to return except into its buffer.
struct LineReader {
    /// Why a read stopped.
    enum Failure: Error, Equatable {
        /// The peer closed the connection; `partial` says whether a line was cut off.
        case closed(partial: Bool)
        /// More than the byte limit without a newline.
        case tooLong
        /// The deadline passed.
        case timedOut
        /// A read error.
        case failed(SystemError)
    }

    let fd: Int32
    /// What the socket is, for errors (its path when known).
    let name: String
    var buffer: [UInt8] = []
    var limit: Int
    var total = 0

    init(fd: Int32, limit: Int, name: String = "socket") {
        self.fd = fd
        self.limit = limit
        self.name = name
    }

    /// Starts a new byte budget (for the next operation on a kept-open connection).
    mutating func resetLimit() { total = buffer.count }

    /// The next line without its `\n`. The limit counts every byte read through this reader.
    mutating func readLine(deadlineMs: Int64) -> Result<[UInt8], Failure> {
        var scanFrom = 0
        while true {
            if let nl = buffer[scanFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return .success(line)
            }
            scanFrom = buffer.count
            guard total < limit else { return .failure(.tooLong) }
            guard SocketIO.wait(fd, events: Int16(POLLIN), deadlineMs: deadlineMs) else { return .failure(.timedOut) }
            var chunk = [UInt8](repeating: 0, count: min(16384, limit - total + 1))
            let received = chunk.withUnsafeMutableBytes { p in
                Result { () throws(SystemError) in try Sys.receiveNonblocking(fd, p, name) }
            }
            let n: Int
            switch received {
            case .success(let r?): n = r
            case .success(nil): continue
            case .failure(let e): return .failure(.failed(e))
            }
            if n == 0 { return .failure(.closed(partial: !buffer.isEmpty)) }
            total += n
            buffer.append(contentsOf: chunk[0..<n])
            if total > limit, buffer[scanFrom...].firstIndex(of: UInt8(ascii: "\n")) == nil { return .failure(.tooLong) }
        }
    }
}
