import Core
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Reads newline-terminated lines from a socket with a byte limit and a deadline. Used by both
/// servers and the client; never reads past what it was asked to return except into its buffer.
public struct LineReader {
    /// Why a read stopped.
    public enum Failure: Error, Equatable {
        /// The peer closed the connection; `partial` says whether a line was cut off.
        case closed(partial: Bool)
        /// More than the byte limit without a newline.
        case tooLong
        /// The deadline passed.
        case timedOut
        /// A read error.
        case failed(SystemError)
    }

    /// The connected socket read from.
    public let fd: Int32
    /// What the socket is, for errors (its path when known).
    public let name: String
    /// Bytes read but not yet returned start at `start` (lines are taken off the front by
    /// moving `start`; the buffer is compacted once per read, not once per line).
    var buffer: [UInt8] = []
    var start = 0
    /// Bytes this reader may read in all (since the last `resetLimit`); more is `.tooLong`.
    public var limit: Int
    /// Bytes read so far against `limit`.
    public var total = 0
    /// Longest line (without its newline) accepted; a longer one is `.tooLong` even under
    /// `limit`, so a stream of many lines never buffers more than this plus one read.
    public var lineLimit = Int.max
    /// One read's worth; lines are assembled in `buffer`.
    private var scratch = [UInt8](repeating: 0, count: 65536)

    public init(fd: Int32, limit: Int, name: String = "socket") {
        self.fd = fd
        self.limit = limit
        self.name = name
    }

    /// Starts a new byte budget (for the next operation on a kept-open connection).
    public mutating func resetLimit() { total = buffer.count - start }

    /// The next line without its `\n`. The limit counts every byte read through this reader.
    public mutating func readLine(deadlineMs: Int64) -> Result<[UInt8], Failure> {
        var scanFrom = start
        while true {
            if let nl = newline(from: scanFrom) {
                if nl - start > lineLimit { return .failure(.tooLong) }
                let line = buffer.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[start..<nl])) }
                start = nl + 1
                if start == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    start = 0
                }
                return .success(line)
            }
            if start > 0 {
                buffer.removeSubrange(0..<start)
                start = 0
            }
            if buffer.count > lineLimit { return .failure(.tooLong) }
            scanFrom = buffer.count
            guard total < limit else { return .failure(.tooLong) }
            guard SocketIO.wait(fd, events: Int16(POLLIN), deadlineMs: deadlineMs) else { return .failure(.timedOut) }
            let want = min(scratch.count, limit - total + 1)
            let received = scratch.withUnsafeMutableBytes { p in
                Result { () throws(SystemError) in
                    try Sys.receiveNonblocking(fd, UnsafeMutableRawBufferPointer(rebasing: p[0..<want]), name)
                }
            }
            let n: Int
            switch received {
            case .success(let r?): n = r
            case .success(nil): continue
            case .failure(let e): return .failure(.failed(e))
            }
            scratch.withUnsafeBufferPointer { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<n])) }
            if n == 0 { return .failure(.closed(partial: !buffer.isEmpty)) }
            total += n
            if total > limit, newline(from: scanFrom) == nil { return .failure(.tooLong) }
        }
    }

    /// Index of the first `\n` at or after `from` (memchr: large requests stream fast).
    private func newline(from: Int) -> Int? {
        guard from < buffer.count else { return nil }
        return buffer.withUnsafeBufferPointer { (p) -> Int? in
            guard let base = p.baseAddress, let hit = memchr(base + from, 0x0A, p.count - from) else { return nil }
            return UnsafePointer(hit.assumingMemoryBound(to: UInt8.self)) - base
        }
    }
}
