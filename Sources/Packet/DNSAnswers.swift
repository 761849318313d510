import Core
/// Reads the addresses a DNS response (RFC 1035 §4) gives for the name the client asked for:
/// A and AAAA records of the query name or of a name a CNAME chain from it reaches (RFC 1034
/// §3.6.2, at most `maxChain` links), with name compression (RFC 1035 §4.1.4) checked for loops
/// and out-of-bounds pointers. Records for names outside the chain are ignored (a response can
/// only teach us about the question it answers).
///
/// Pure and bounded. All storage is allocated once in `init`; `parse` allocates nothing and
/// leaves its result in the parser until the next call: `queryName`, the `chain` of CNAME
/// targets, and per address its TTL (the smallest TTL on its path: CNAME links and the record).
/// Names are stored decoded (dotted, ASCII lower-cased, no trailing dot).
///
/// Not thread-safe: one per data-path thread.
public final class DNSAnswers {
    /// One answered address.
    public struct Answer: Equatable, Sendable {
        /// The A or AAAA record's address.
        public var address: IPAddress
        /// Seconds: the smallest TTL of the record and of the CNAME links leading to its owner.
        public var ttl: UInt32
        /// How many chain names lead to the address's owner (0 = the query name owns it).
        public var chainDepth: Int
    }

    /// The longest CNAME chain followed.
    public let maxChain: Int
    /// The most addresses kept from one message (the rest are ignored).
    public let maxAnswers: Int
    /// The most resource records looked at in one message (answer and authority sections).
    public static let maxRecords = 64

    /// Addresses found by the last `parse`.
    public private(set) var answerCount = 0
    /// CNAME targets from the query name, in order, found by the last `parse`.
    public private(set) var chainCount = 0

    // Decoded names, each stored once in `nameBytes` as (start, length).
    private let nameBytes: UnsafeMutablePointer<UInt8>
    private let nameBytesCapacity: Int
    private var nameBytesUsed = 0
    private let nameStart: UnsafeMutablePointer<Int32>
    private let nameLength: UnsafeMutablePointer<Int32>
    private var nameCount = 0
    private static let maxNames = maxRecords * 2 + 1

    // Records of the last message: owner name, type, TTL, data (message offset or target name).
    private struct Record {
        var owner: Int32
        var type: UInt16
        var ttl: UInt32
        var data: Int32
        var dataLength: Int32
    }
    private let records: UnsafeMutablePointer<Record>
    private var recordCount = 0
    private let answers: UnsafeMutablePointer<Answer>
    private let chainNames: UnsafeMutablePointer<Int32>
    private var queryNameIndex: Int32 = -1

    /// A parser following at most `maxChain` CNAME links and keeping at most `maxAnswers`
    /// addresses per message.
    public init(maxChain: Int = 8, maxAnswers: Int = 32) {
        precondition(maxChain >= 0 && maxChain <= 32 && maxAnswers >= 1 && maxAnswers <= DNSAnswers.maxRecords)
        self.maxChain = maxChain
        self.maxAnswers = maxAnswers
        nameBytesCapacity = DNSAnswers.maxNames * 256
        nameBytes = .allocate(capacity: nameBytesCapacity)
        nameStart = .allocate(capacity: DNSAnswers.maxNames)
        nameLength = .allocate(capacity: DNSAnswers.maxNames)
        records = .allocate(capacity: DNSAnswers.maxRecords)
        answers = .allocate(capacity: maxAnswers)
        chainNames = .allocate(capacity: maxChain)
    }

    deinit {
        nameBytes.deallocate()
        nameStart.deallocate()
        nameLength.deallocate()
        records.deallocate()
        answers.deallocate()
        chainNames.deallocate()
    }

    /// The outcome of `parse`.
    public enum Outcome: Equatable, Sendable {
        /// A well-formed response; `answerCount` addresses (possibly 0: a CNAME-only or MX
        /// answer, an empty NOERROR) are in `answer(_:)`.
        case answered
        /// Nothing learned, for this reason (count it).
        case failed(DNSFailure)
    }

    /// The name the client asked for (valid after `.answered`, until the next `parse`).
    public var queryName: UnsafeRawBufferPointer { name(queryNameIndex) }

    /// CNAME target `i` (0 ..< `chainCount`): `chain(0)` is what the query name is an alias of.
    public func chain(_ i: Int) -> UnsafeRawBufferPointer {
        precondition(i >= 0 && i < chainCount)
        return name(chainNames[i])
    }

    /// Address `i` (0 ..< `answerCount`).
    public func answer(_ i: Int) -> Answer {
        precondition(i >= 0 && i < answerCount)
        return answers[i]
    }

    private func name(_ index: Int32) -> UnsafeRawBufferPointer {
        guard index >= 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: nameBytes + Int(nameStart[Int(index)]), count: Int(nameLength[Int(index)]))
    }

    /// Parses a DNS-over-TCP payload (RFC 1035 §4.2.2): a 2-byte length, then the message. A
    /// payload holding less than the length says is `.failed(.incompleteTCP)` (reassemble it
    /// first, e.g. with a `FirstFlightBuffer`); bytes after the message are ignored.
    public func parse(tcpPayload p: UnsafeRawBufferPointer) -> Outcome {
        reset()
        guard p.count >= 2 else { return .failed(.incompleteTCP) }
        let length = Int(p.be16(0))
        guard p.count - 2 >= length else { return .failed(.incompleteTCP) }
        return parse(UnsafeRawBufferPointer(rebasing: p[2..<(2 + length)]))
    }

    /// Parses the DNS response in a parsed IP packet from port 53 (UDP: the datagram's payload;
    /// TCP: the segment's payload with its length prefix, `.incompleteTCP` when the message
    /// spans segments). Nil when the packet is not UDP/TCP from port 53 (not an answer).
    public func parse(response p: ParsedPacket, in packet: UnsafeRawBufferPointer) -> Outcome? {
        guard p.hasTransportHeader, p.sourcePort == 53, p.proto == .udp || p.proto == .tcp,
              p.payloadOffset <= p.totalLength, p.totalLength <= packet.count
        else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: packet[p.payloadOffset..<p.totalLength])
        if p.proto == .tcp && payload.isEmpty { return nil }  // a bare ACK or FIN
        return p.proto == .udp ? parse(payload) : parse(tcpPayload: payload)
    }

    /// Parses one DNS message (a UDP payload).
    public func parse(_ m: UnsafeRawBufferPointer) -> Outcome {
        reset()
        let n = m.count
        guard n >= 12 else { return .failed(.truncated) }
        let flags = m.be16(2)
        guard flags & 0x8000 != 0, (flags >> 11) & 0xF == 0 else { return .failed(.notResponse) }
        let truncatedFlag = flags & 0x0200 != 0
        let rcode = flags & 0xF
        guard m.be16(4) == 1 else { return .failed(.questionCount) }
        let recordTotal = Int(m.be16(6)) + Int(m.be16(8))
        var i = 12
        switch readName(m, &i) {
        case .failure(let f): return .failed(f)
        case .success(let q): queryNameIndex = q
        }
        guard i + 4 <= n else { return .failed(.truncated) }
        i += 4  // QTYPE, QCLASS: any (an ANY or HTTPS query may still carry A/AAAA)
        if rcode != 0 { return .failed(.errorResponse) }
        // Answer and authority records (a CNAME may sit in either for some resolvers; the
        // additional section is never trusted).
        var r = 0
        while r < recordTotal && recordCount < DNSAnswers.maxRecords {
            r += 1
            if i == n && truncatedFlag { break }  // TC: the rest was cut off on purpose
            let owner: Int32
            switch readName(m, &i) {
            case .failure(.truncated) where truncatedFlag: return finish(m)
            case .failure(let f): return .failed(f)
            case .success(let o): owner = o
            }
            guard i + 10 <= n else { return truncatedFlag ? finish(m) : .failed(.truncated) }
            let type = m.be16(i)
            let klass = m.be16(i + 2)
            let ttl = m.be32(i + 4)
            let length = Int(m.be16(i + 8))
            i += 10
            guard i + length <= n else { return truncatedFlag ? finish(m) : .failed(.truncated) }
            let dataStart = i
            i += length
            guard klass == 1 && (type == 1 || type == 28 || type == 5) else {
                dropLastName()  // IN A/AAAA/CNAME only; the owner's name slot is reused
                continue
            }
            // RFC 2181 §8: a TTL with the top bit set is treated as 0.
            let cleanTTL = ttl & 0x8000_0000 != 0 ? 0 : ttl
            switch type {
            case 1, 28:
                guard length == (type == 1 ? 4 : 16) else { return .failed(.badRecordData) }
                records[recordCount] = Record(owner: owner, type: type, ttl: cleanTTL, data: Int32(dataStart), dataLength: Int32(length))
                recordCount += 1
            case 5:
                var j = dataStart
                let target: Int32
                switch readName(m, &j, limit: dataStart + length) {
                case .failure(.truncated): return .failed(.badRecordData)
                case .failure(let f): return .failed(f)
                case .success(let t): target = t
                }
                guard j == dataStart + length else { return .failed(.badRecordData) }
                records[recordCount] = Record(owner: owner, type: 5, ttl: cleanTTL, data: target, dataLength: 0)
                recordCount += 1
            default:
                continue
            }
        }
        return finish(m)
    }

    /// Forgets the name read last (the owner of a record that is skipped).
    private func dropLastName() {
        nameCount -= 1
        nameBytesUsed = Int(nameStart[nameCount])
    }

    private func reset() {
        answerCount = 0
        chainCount = 0
        nameCount = 0
        nameBytesUsed = 0
        recordCount = 0
        queryNameIndex = -1
    }

    /// Follows the chain from the query name and collects the addresses of its names.
    private func finish(_ m: UnsafeRawBufferPointer) -> Outcome {
        var current = queryNameIndex
        var pathTTL = UInt32.max
        var depth = 0
        while true {
            // Addresses owned by `current`.
            for k in 0..<recordCount where records[k].type != 5 && sameName(records[k].owner, current) && answerCount < maxAnswers {
                let rec = records[k]
                let d = Int(rec.data)
                let address = rec.type == 1 ? IPAddress(v4: m.be32(d)) : IPAddress(v6High: m.be64(d), low: m.be64(d + 8))
                answers[answerCount] = Answer(address: address, ttl: min(pathTTL, rec.ttl), chainDepth: depth)
                answerCount += 1
            }
            guard depth < maxChain else { break }
            // The next link: a CNAME owned by `current`.
            var next: Int32 = -1
            for k in 0..<recordCount where records[k].type == 5 && sameName(records[k].owner, current) {
                next = records[k].data
                pathTTL = min(pathTTL, records[k].ttl)
                break
            }
            guard next >= 0 else { break }
            // A chain that comes back to a name already on it ends there.
            if sameName(next, queryNameIndex) { break }
            var seen = false
            for c in 0..<chainCount where sameName(chainNames[c], next) { seen = true }
            if seen { break }
            chainNames[chainCount] = next
            chainCount += 1
            depth += 1
            current = next
        }
        return .answered
    }

    private func sameName(_ a: Int32, _ b: Int32) -> Bool {
        if a == b { return true }
        let la = Int(nameLength[Int(a)])
        guard la == Int(nameLength[Int(b)]) else { return false }
        let pa = nameBytes + Int(nameStart[Int(a)])
        let pb = nameBytes + Int(nameStart[Int(b)])
        for k in 0..<la where pa[k] != pb[k] { return false }
        return true
    }

    private enum NameResult {
        case success(Int32)
        case failure(DNSFailure)
    }

    /// Decodes the name at `i` into the name store (lower-cased, dotted) and moves `i` past it
    /// in the message (past the first pointer, if any). `limit` bounds the uncompressed part
    /// (a record's data end); pointers may reach anywhere before them in the message.
    private func readName(_ m: UnsafeRawBufferPointer, _ i: inout Int, limit: Int? = nil) -> NameResult {
        let end = min(limit ?? m.count, m.count)
        guard nameCount < DNSAnswers.maxNames else { return .failure(.truncated) }
        let start = nameBytesUsed
        var out = start
        var pos = i
        var segmentStart = i  // where the labels being read began: pointers must point before it
        var jumped = false
        var jumps = 0
        var wireLength = 0
        var segmentEnd = end
        while true {
            guard pos < segmentEnd else { return .failure(.truncated) }
            let len = Int(m[pos])
            switch len & 0xC0 {
            case 0x00:
                if len == 0 {
                    if !jumped { i = pos + 1 }
                    wireLength += 1
                    guard wireLength <= 255 else { return .failure(.nameTooLong) }
                    if out > start { out -= 1 }  // the trailing dot
                    nameStart[nameCount] = Int32(start)
                    nameLength[nameCount] = Int32(out - start)
                    nameBytesUsed = out
                    nameCount += 1
                    return .success(Int32(nameCount - 1))
                }
                wireLength += 1 + len
                guard wireLength <= 255 else { return .failure(.nameTooLong) }
                guard pos + 1 + len <= segmentEnd else { return .failure(.truncated) }
                for k in 0..<len {
                    let c = m[pos + 1 + k]
                    nameBytes[out + k] = c >= 0x41 && c <= 0x5A ? c | 0x20 : c
                }
                out += len
                nameBytes[out] = UInt8(ascii: ".")
                out += 1
                pos += 1 + len
            case 0xC0:
                guard pos + 2 <= segmentEnd else { return .failure(.truncated) }
                let target = Int(m.be16(pos) & 0x3FFF)
                guard target < m.count else { return .failure(.pointerOutOfBounds) }
                guard target < segmentStart else { return .failure(.compressionLoop) }
                jumps += 1
                guard jumps <= 32 else { return .failure(.compressionLoop) }
                if !jumped { i = pos + 2 }
                jumped = true
                pos = target
                segmentStart = target
                segmentEnd = m.count
            default:
                return .failure(.badLabel)
            }
        }
    }
}
