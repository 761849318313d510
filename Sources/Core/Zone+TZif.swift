extension Zone {
    /// The zone a TZif file describes (RFC 8536: version 1 data, or the 64-bit version 2+ data and
    /// its POSIX `TZ` footer). Only offsets are kept; leap-second records and designations are
    /// checked for size and skipped. A clear error for anything that is not such a file.
    public init(identifier: String, tzif bytes: some Collection<UInt8>) throws(ValueError) {
        let data = Array(bytes)
        func bad(_ what: String) -> ValueError { ValueError("\(identifier): not a TZif time zone file (\(what))") }
        var r = ByteReader(data)
        guard let v1 = r.header() else { throw bad("no TZif header") }
        let version = v1.version
        var h = v1
        var timeSize = 4
        if version >= UInt8(ascii: "2") {
            // Skip the 32-bit block; the 64-bit one follows with its own header.
            guard r.skip(h.blockSize(timeSize: 4)), let h2 = r.header() else { throw bad("truncated version 1 data") }
            h = h2
            timeSize = 8
        } else if version != 0 {
            throw bad("unknown version \(version)")
        }
        guard h.typecnt > 0, h.charcnt > 0, h.isutcnt == 0 || h.isutcnt == h.typecnt, h.isstdcnt == 0 || h.isstdcnt == h.typecnt
        else { throw bad("inconsistent counts") }
        guard r.remaining >= h.blockSize(timeSize: timeSize) else { throw bad("truncated data") }
        var transitions: [Int64] = []
        transitions.reserveCapacity(h.timecnt)
        for _ in 0..<h.timecnt {
            let t = timeSize == 8 ? Int64(bitPattern: r.u64()) : Int64(Int32(bitPattern: r.u32()))
            if let last = transitions.last, t <= last { throw bad("transition times out of order") }
            transitions.append(t)
        }
        var typeIndexes: [Int] = []
        typeIndexes.reserveCapacity(h.timecnt)
        for _ in 0..<h.timecnt {
            let i = Int(r.u8())
            guard i < h.typecnt else { throw bad("transition type \(i) of \(h.typecnt)") }
            typeIndexes.append(i)
        }
        var typeOffsets: [Int32] = []
        for _ in 0..<h.typecnt {
            let off = Int32(bitPattern: r.u32())
            _ = r.u8()  // isdst
            let desig = Int(r.u8())
            // RFC 8536 §3.2: -2^31 is not allowed; real offsets are within about ±26 h.
            guard off > Int32.min, abs(off) <= 26 * 3600 else { throw bad("offset \(off) s") }
            guard desig < h.charcnt else { throw bad("designation index \(desig) of \(h.charcnt)") }
            typeOffsets.append(off)
        }
        _ = r.skip(h.charcnt + h.leapcnt * (timeSize + 4) + h.isstdcnt + h.isutcnt)
        var rule: PosixZoneRule?
        if timeSize == 8 {
            // The footer: "\n" TZ-string "\n" (an empty string: no rule).
            guard r.u8IfAny() == UInt8(ascii: "\n") else { throw bad("no footer") }
            var text: [UInt8] = []
            while true {
                guard let c = r.u8IfAny() else { throw bad("footer without its closing newline") }
                if c == UInt8(ascii: "\n") { break }
                guard c >= 0x20, c < 0x7F else { throw bad("control byte in the footer") }
                text.append(c)
            }
            if !text.isEmpty {
                do throws(ValueError) {
                    rule = try PosixZoneRule(parsing: String(decoding: text, as: UTF8.self))
                } catch {
                    throw bad("footer: \(error.message)")
                }
            }
        }
        self.init(identifier: identifier, transitions: transitions, offsets: typeIndexes.map { typeOffsets[$0] },
                  initialOffset: typeOffsets[0], rule: rule)
    }
}

/// A TZif header's counts (RFC 8536 §3.1).
private struct TZifHeader {
    var version: UInt8
    var isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt: Int

    /// The bytes of the data block that follows, `timeSize` bytes per time.
    func blockSize(timeSize: Int) -> Int {
        timecnt * timeSize + timecnt + typecnt * 6 + charcnt + leapcnt * (timeSize + 4) + isstdcnt + isutcnt
    }
}

/// Big-endian reads with bounds checked by the caller (`remaining`) or by the `…IfAny` form.
private struct ByteReader {
    let b: [UInt8]
    var i = 0
    init(_ b: [UInt8]) { self.b = b }
    var remaining: Int { b.count - i }

    mutating func skip(_ n: Int) -> Bool {
        guard n >= 0, n <= remaining else { return false }
        i += n
        return true
    }

    mutating func u8() -> UInt8 { defer { i += 1 }; return b[i] }
    mutating func u8IfAny() -> UInt8? { i < b.count ? u8() : nil }
    mutating func u32() -> UInt32 { (0..<4).reduce(UInt32(0)) { v, _ in v << 8 | UInt32(u8()) } }
    mutating func u64() -> UInt64 { UInt64(u32()) << 32 | UInt64(u32()) }

    /// `TZif`, version, 15 unused bytes, six counts; nil when short, wrong or absurdly large.
    mutating func header() -> TZifHeader? {
        guard remaining >= 44, b[i] == 0x54, b[i + 1] == 0x5A, b[i + 2] == 0x69, b[i + 3] == 0x66 else { return nil }
        i += 4
        let version = u8()
        i += 15
        let c = (0..<6).map { _ in Int(u32()) }
        // Counts beyond the file's size cannot be right; refusing them keeps sizes from overflowing.
        guard c.allSatisfy({ $0 <= b.count }) else { return nil }
        return TZifHeader(version: version, isutcnt: c[0], isstdcnt: c[1], leapcnt: c[2], timecnt: c[3], typecnt: c[4], charcnt: c[5])
    }
}
