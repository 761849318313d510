import Core
#if canImport(Glibc)
import Glibc
#endif

/// One UAPI connection's input as a state machine: bytes in (`append`), operations out
/// (`next`), no socket, no clock (https://www.wireguard.com/xplatform/#configuration-protocol).
///
/// Operations: `get=1` followed by a blank line; `set=1`, its `key=value` lines, a blank line.
/// A connection may carry several, one after another. The server asks for the next operation
/// only once the reply to the previous one is written, so a client sending many operations
/// without reading is read no further than one buffer ahead.
///
/// Rules (the same as the blocking reader they replace):
/// - a `set=1` is parsed line by line as it arrives (`UAPISetParser`), never held as text; after
///   a bad line the rest of the operation is read but not parsed, and the error is the answer;
/// - a `set=1` over `maxOperationBytes` (the `set=1` line included) or with a line over
///   `maxLineBytes` ends in `tooLarge` (`EMSGSIZE`), after which the connection is closed;
/// - `get=1` followed by anything but a blank line is `EINVAL` (the connection stays usable);
/// - an unknown operation, or an operation line over `maxLineBytes`, is `close` (no reply).
public struct UAPIStream: Sendable {
    /// What the input asks for.
    public enum Event: Equatable, Sendable {
        /// A complete `get=1`: answer with the device state and `errno=0`.
        case get
        /// A complete, well-formed `set=1`: apply it and answer with its errno.
        case set(UAPISetRequest)
        /// A complete operation that failed to parse: answer with this errno.
        case failed(UAPIError)
        /// A `set=1` over a size limit: answer with this errno (`EMSGSIZE`), then close.
        case tooLarge(UAPIError)
        /// Not the protocol: close without answering.
        case close
    }

    private enum State: Sendable {
        case operation
        case getBlank
        case set(UAPISetParser, failure: UAPIError?)
        case closed
    }

    /// Largest `set=1` operation (bytes).
    public let maxOperationBytes: Int
    /// Longest line (bytes, without its newline).
    public let maxLineBytes: Int
    private var state = State.operation
    /// Bytes not yet consumed start at `start` (compacted once per `append`, not once per line).
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where to resume looking for a newline (bytes before it have none).
    private var scanFrom = 0
    /// Bytes of the operation in progress consumed so far (lines and newlines).
    private var operationBytes = 0
    /// `set=1` lines of the operation in progress.
    private var setLines = 0
    /// Counts every 1024 lines of `set=1` body: a server may extend a deadline while a big
    /// request keeps arriving.
    public private(set) var progress: UInt64 = 0

    /// A machine waiting for its first operation.
    public init(maxOperationBytes: Int, maxLineBytes: Int) {
        self.maxOperationBytes = maxOperationBytes
        self.maxLineBytes = maxLineBytes
    }

    /// True when no more input will be taken (after `close` or `tooLarge`).
    public var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Bytes received but not yet consumed.
    public var buffered: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosed else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard !isClosed else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        guard start > 0 else { return }
        buffer.removeSubrange(0..<start)
        scanFrom -= start
        start = 0
    }

    /// The next complete operation, or nil when more bytes are needed (or after a close).
    public mutating func next() -> Event? {
        while true {
            if isClosed { return nil }
            guard let nl = newline() else {
                // No complete line: refuse what can no longer become a valid one.
                let partial = buffer.count - start
                if partial > maxLineBytes { return overlong() }
                if case .set = state, operationBytes + partial > maxOperationBytes { return tooLarge(line: false) }
                return nil
            }
            let length = nl - start
            if length > maxLineBytes { return overlong() }
            let line = buffer.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<nl]), as: UTF8.self) }
            start = nl + 1
            scanFrom = start
            operationBytes += length + 1
            if start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
                scanFrom = 0
            }
            if let event = take(line, empty: length == 0) { return event }
        }
    }

    private mutating func take(_ line: String, empty: Bool) -> Event? {
        switch state {
        case .operation:
            switch line {
            case "get=1":
                state = .getBlank
            case "set=1":
                state = .set(UAPISetParser(), failure: nil)
                setLines = 0
            default:
                return close()
            }
            return nil
        case .getBlank:
            endOperation()
            return empty ? .get : .failed(.invalid("trailing data after get=1"))
        case .set(var parser, let failure):
            if operationBytes > maxOperationBytes { return tooLarge(line: false) }
            if empty {
                endOperation()
                if let failure { return .failed(failure) }
                return .set(parser.finish())
            }
            setLines += 1
            if setLines & 0x3ff == 0 { progress &+= 1 }
            guard failure == nil else { return nil }  // read the rest, parse no more
            state = .operation  // the parser is held uniquely while it is fed (no copy per line)
            do throws(UAPIError) {
                try parser.feed(line)
                state = .set(parser, failure: nil)
            } catch {
                state = .set(parser, failure: error)
            }
            return nil
        case .closed:
            return nil
        }
    }

    private mutating func endOperation() {
        state = .operation
        operationBytes = 0
    }

    private mutating func overlong() -> Event {
        if case .set = state { return tooLarge(line: true) }
        return close()
    }

    private mutating func tooLarge(line: Bool) -> Event {
        state = .closed
        dropBuffer()
        return .tooLarge(UAPIError(errno: EMSGSIZE, message: line
            ? "set line longer than \(maxLineBytes) bytes" : "set operation larger than \(maxOperationBytes) bytes"))
    }

    private mutating func close() -> Event {
        state = .closed
        dropBuffer()
        return .close
    }

    private mutating func dropBuffer() {
        buffer = []
        start = 0
        scanFrom = 0
    }

    /// Index of the first `\n` at or after `scanFrom` (memchr: large requests stream fast).
    private mutating func newline() -> Int? {
        let from = max(scanFrom, start)
        guard from < buffer.count else { return nil }
        let hit = buffer.withUnsafeBufferPointer { (p) -> Int? in
            guard let base = p.baseAddress, let hit = memchr(base + from, 0x0A, p.count - from) else { return nil }
            return UnsafePointer(hit.assumingMemoryBound(to: UInt8.self)) - base
        }
        if hit == nil { scanFrom = buffer.count }
        return hit
    }
}
