import Core
/// The host name of a `flow-host` record (docs/ring.md): up to `LiveRecord.hostBytes` bytes of
/// the name's text, in the slot's address, port/length and capture/detail fields (a flow-host
/// record has no addresses of its own: its flow's `flow-open` record had them), NUL-padded;
/// bit 0 of `tcpFlags` set when the name was longer and cut. Names are ASCII (IDNs are punycode
/// in rules and on the wire), so a cut never splits a character; other bytes are kept as they are.
extension LiveRecord {
    /// The longest host text a record carries.
    public static let hostBytes = 64

    /// A `flow-host` record for flow `flowID` of peer `peerIndex`, decided `verdict`.
    public static func flowHost(flowID: UInt64, peerIndex: UInt32, verdict: Verdict, host: String) -> LiveRecord {
        var r = LiveRecord()
        r.kind = .flowHost
        r.flowID = flowID
        r.peerIndex = peerIndex
        r.verdict = verdict
        r.direction = nil
        r.hostName = host
        return r
    }

    /// The host of a `flow-host` record (nil for other kinds); setting it stores the first
    /// `hostBytes` bytes and marks a longer name as cut.
    public var hostName: String? {
        get {
            guard kind == .flowHost else { return nil }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(LiveRecord.hostBytes)
            func take(_ v: UInt64, _ n: Int) { for i in 0..<n { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
            for w in [sourceHigh, sourceLow, destinationHigh, destinationLow, captureOffset, detail, detail2] { take(w, 8) }
            take(UInt64(length), 4)
            take(UInt64(captureFileSequence), 4)
            let text = String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            return hostTruncated ? text + "…" : text
        }
        set {
            let utf8 = Array((newValue ?? "").utf8)
            let cut = utf8.count > LiveRecord.hostBytes
            var b = [UInt8](repeating: 0, count: LiveRecord.hostBytes)
            for (i, c) in utf8.prefix(LiveRecord.hostBytes).enumerated() { b[i] = c }
            func word(_ at: Int, _ n: Int) -> UInt64 {
                var v: UInt64 = 0
                for i in 0..<n { v |= UInt64(b[at + i]) << (8 * UInt64(i)) }
                return v
            }
            sourceHigh = word(0, 8); sourceLow = word(8, 8); destinationHigh = word(16, 8); destinationLow = word(24, 8)
            captureOffset = word(32, 8); detail = word(40, 8); detail2 = word(48, 8)
            length = UInt32(word(56, 4)); captureFileSequence = UInt32(word(60, 4))
            tcpFlags = cut ? 1 : 0
        }
    }

    /// True when a `flow-host` record's name was longer than `hostBytes` and cut.
    public var hostTruncated: Bool { kind == .flowHost && tcpFlags & 1 != 0 }
}
