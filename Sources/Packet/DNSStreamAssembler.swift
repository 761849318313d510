import Core

/// DNS over TCP answers that span segments (RFC 7766 §8: each message is prefixed by its
/// two-byte length, and a message may be cut anywhere): the server's bytes of a connection are
/// collected in order until each message is whole, then handed out one by one. Pure and bounded:
/// `streams` connections at a time, at most `maxMessage` bytes of one message, all preallocated;
/// the least recently fed connection gives its slot to a new one.
///
/// A connection is known by the caller's `Key` (peer and both ends). Bytes must come in order
/// (DNS answers are small: a gap means a lost or reordered segment, and the message is given up,
/// not guessed); a segment that starts before what was already taken (a retransmission) is
/// skipped up to the new bytes. What cannot be assembled is reported, never lost silently.
public final class DNSStreamAssembler {
    /// One TCP connection's server → client direction.
    public struct Key: Hashable, Sendable {
        public var peer: UInt32
        public var server: IPAddress
        public var serverPort: UInt16
        public var client: IPAddress
        public var clientPort: UInt16
        public init(peer: UInt32, server: IPAddress, serverPort: UInt16, client: IPAddress, clientPort: UInt16) {
            self.peer = peer
            self.server = server
            self.serverPort = serverPort
            self.client = client
            self.clientPort = clientPort
        }
    }

    /// What one `feed` could not keep.
    public enum Problem: Equatable, Sendable {
        /// Bytes missing before this segment: the connection's partial message was dropped.
        case gap
        /// A message longer than `maxMessage`: dropped, and the connection with it.
        case tooLong
        /// Another connection's partial message was dropped to make room for this one.
        case evicted
    }

    public let streams: Int
    public let maxMessage: Int
    private var keys: [Key?]
    private var next: [UInt32]
    private var fill: [Int]
    /// The connection lost bytes: the rest of it is skipped (message boundaries are unknown).
    private var lost: [Bool]
    private var lastUse: [UInt64]
    private var clock: UInt64 = 0
    private let buffer: UnsafeMutableRawBufferPointer

    /// Room for `streams` connections with a partial message of up to `maxMessage` bytes each.
    public init(streams: Int = 8, maxMessage: Int = 16_384) {
        self.streams = max(1, streams)
        self.maxMessage = max(12, maxMessage)
        keys = Array(repeating: nil, count: self.streams)
        next = Array(repeating: 0, count: self.streams)
        fill = Array(repeating: 0, count: self.streams)
        lost = Array(repeating: false, count: self.streams)
        lastUse = Array(repeating: 0, count: self.streams)
        buffer = .allocate(byteCount: self.streams * (self.maxMessage + 2), alignment: 8)
    }

    deinit { buffer.deallocate() }

    /// Connections with a partial message now.
    public var active: Int { keys.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    /// The server's segment of connection `key` with TCP sequence number `sequence` and
    /// `payload`: calls `message` with each DNS message it completes (without its length prefix),
    /// in order; returns what had to be dropped (nil: nothing). `closing` (FIN or RST) forgets the
    /// connection after this segment.
    @discardableResult
    public func feed(_ key: Key, sequence: UInt32, payload: UnsafeRawBufferPointer, closing: Bool = false,
                     message: (UnsafeRawBufferPointer) -> Void) -> Problem?
    {
        clock &+= 1
        var data = payload
        let slot = keys.firstIndex(of: key)
        if let s = slot {
            let expected = next[s]
            let ahead = Int32(bitPattern: sequence &- expected)  // > 0: bytes missing
            if lost[s] || ahead > 0 {
                // Bytes are missing: where the next message starts is unknown, so the rest of
                // the connection is skipped until it closes (reported once).
                let first = !lost[s]
                lost[s] = true
                fill[s] = 0
                lastUse[s] = clock
                next[s] = sequence &+ UInt32(truncatingIfNeeded: payload.count)
                if closing { release(s) }
                return first ? .gap : nil
            } else if ahead < 0 {
                let seen = Int(-Int64(ahead))
                if seen >= data.count {  // all of it was taken before
                    if closing { release(s) }
                    return nil
                }
                data = UnsafeRawBufferPointer(rebasing: data[seen...])
            }
        }
        guard let s = slot else {
            // No partial message: whole messages are handed out straight from the segment.
            var rest = data
            while let m = Self.whole(rest) {
                message(UnsafeRawBufferPointer(rebasing: m.dropFirst(2)))
                rest = UnsafeRawBufferPointer(rebasing: rest[m.count...])
            }
            if rest.isEmpty || closing { return nil }
            if rest.count >= 2, Int(rest.be16(0)) > maxMessage { return .tooLong }
            let (t, evicted) = take(key)
            copy(rest, into: t)
            next[t] = sequence &+ UInt32(truncatingIfNeeded: payload.count)
            return evicted ? .evicted : nil
        }
        // Continue the partial message in `s`.
        lastUse[s] = clock
        let base = buffer.baseAddress! + s * (maxMessage + 2)
        var used = fill[s]
        var rest = data
        while !rest.isEmpty {
            let room = maxMessage + 2 - used
            let n = min(room, rest.count)
            (base + used).copyMemory(from: rest.baseAddress!, byteCount: n)
            used += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            // Hand out every whole message at the front, moving what follows down.
            var start = 0
            while let m = Self.whole(UnsafeRawBufferPointer(start: base + start, count: used - start)) {
                message(UnsafeRawBufferPointer(rebasing: m.dropFirst(2)))
                start += m.count
            }
            if start > 0 {
                if used > start { memmoveBytes(base, base + start, used - start) }
                used -= start
            }
            if used >= 2, Int(UnsafeRawBufferPointer(start: base, count: used).be16(0)) > maxMessage {
                release(s)
                return .tooLong
            }
        }
        fill[s] = used
        next[s] = sequence &+ UInt32(truncatingIfNeeded: payload.count)
        if used == 0 || closing { release(s) }
        return nil
    }

    /// Forgets every partial message of `peer` (a removed peer).
    public func forget(peer: UInt32) {
        for s in keys.indices where keys[s]?.peer == peer { release(s) }
    }

    /// The first whole length-prefixed message at the start of `b` (prefix included), if any.
    static func whole(_ b: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard b.count >= 2 else { return nil }
        let n = 2 + Int(b.be16(0))
        guard b.count >= n else { return nil }
        return UnsafeRawBufferPointer(rebasing: b[0..<n])
    }

    private func take(_ key: Key) -> (Int, Bool) {
        if let free = keys.firstIndex(where: { $0 == nil }) {
            keys[free] = key
            lastUse[free] = clock
            return (free, false)
        }
        var oldest = 0
        for s in 1..<streams where lastUse[s] < lastUse[oldest] { oldest = s }
        keys[oldest] = key
        lastUse[oldest] = clock
        fill[oldest] = 0
        lost[oldest] = false
        return (oldest, true)
    }

    private func copy(_ bytes: UnsafeRawBufferPointer, into s: Int) {
        let n = min(bytes.count, maxMessage + 2)
        (buffer.baseAddress! + s * (maxMessage + 2)).copyMemory(from: bytes.baseAddress!, byteCount: n)
        fill[s] = n
    }

    private func release(_ s: Int) {
        keys[s] = nil
        fill[s] = 0
        lost[s] = false
    }

    private func memmoveBytes(_ to: UnsafeMutableRawPointer, _ from: UnsafeMutableRawPointer, _ n: Int) {
        to.copyMemory(from: UnsafeRawPointer(from), byteCount: n)  // to < from: front to back is safe
    }
}
