import Core
import Testing
@testable import Packet

/// Builds DNS messages for the tests: names as label sequences, records appended raw.
struct DNSBuilder {
    var bytes: [UInt8]

    init(id: UInt16 = 0x1234, flags: UInt16 = 0x8180, questions: UInt16 = 1, answers: UInt16, authority: UInt16 = 0) {
        bytes = TestPackets.be16(id) + TestPackets.be16(flags) + TestPackets.be16(questions) + TestPackets.be16(answers)
            + TestPackets.be16(authority) + [0, 0]
    }

    static func name(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        for label in s.split(separator: ".") { out += [UInt8(label.utf8.count)] + Array(label.utf8) }
        return out + [0]
    }

    /// Appends a question; returns the name's offset (for compression pointers).
    @discardableResult mutating func question(_ name: String, type: UInt16 = 1) -> Int {
        let at = bytes.count
        bytes += DNSBuilder.name(name) + TestPackets.be16(type) + [0, 1]
        return at
    }

    static func pointer(_ offset: Int) -> [UInt8] { [0xC0 | UInt8(offset >> 8), UInt8(offset & 0xFF)] }

    mutating func record(owner: [UInt8], type: UInt16, ttl: UInt32 = 300, klass: UInt16 = 1, data: [UInt8]) {
        bytes += owner + TestPackets.be16(type) + TestPackets.be16(klass)
        bytes += [UInt8(ttl >> 24), UInt8((ttl >> 16) & 0xFF), UInt8((ttl >> 8) & 0xFF), UInt8(ttl & 0xFF)]
        bytes += TestPackets.be16(UInt16(data.count)) + data
    }
}

func dnsString(_ b: UnsafeRawBufferPointer) -> String { String(decoding: b, as: UTF8.self) }

/// The parse of `m` as (outcome, query name, chain, answers as "address ttl depth").
func dnsParse(_ m: [UInt8], parser: DNSAnswers = DNSAnswers(), tcp: Bool = false) -> (DNSAnswers.Outcome, String, [String], [String]) {
    let outcome = m.withUnsafeBytes { tcp ? parser.parse(tcpPayload: $0) : parser.parse($0) }
    guard outcome == .answered else { return (outcome, "", [], []) }
    let chain = (0..<parser.chainCount).map { dnsString(parser.chain($0)) }
    let answers = (0..<parser.answerCount).map { i -> String in
        let a = parser.answer(i)
        return "\(a.address) \(a.ttl) \(a.chainDepth)"
    }
    return (outcome, dnsString(parser.queryName), chain, answers)
}

@Suite struct DNSAnswersTests {
    /// www.Example.com CNAME edge.cdn.net (TTL 60), edge.cdn.net A 192.0.2.7 (300), AAAA
    /// 2001:db8::7 (30), all owners compressed; plus an unrelated A the resolver slipped in.
    static func cdnAnswer() -> [UInt8] {
        var b = DNSBuilder(answers: 4)
        let q = b.question("www.Example.com")
        let target = DNSBuilder.name("edge.cdn.net")
        let targetAt = b.bytes.count + 12  // owner pointer (2) + fixed fields (10) precede the data
        b.record(owner: DNSBuilder.pointer(q), type: 5, ttl: 60, data: target)
        b.record(owner: DNSBuilder.pointer(targetAt), type: 1, ttl: 300, data: [192, 0, 2, 7])
        b.record(owner: DNSBuilder.pointer(targetAt), type: 28, ttl: 30, data: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [7])
        b.record(owner: DNSBuilder.name("evil.example"), type: 1, data: [6, 6, 6, 6])
        return b.bytes
    }

    @Test func simpleA() {
        var b = DNSBuilder(answers: 2)
        let q = b.question("example.com")
        b.record(owner: DNSBuilder.pointer(q), type: 1, ttl: 120, data: [93, 184, 216, 34])
        b.record(owner: DNSBuilder.pointer(q), type: 1, ttl: 90, data: [93, 184, 216, 35])
        let (o, name, chain, answers) = dnsParse(b.bytes)
        #expect(o == .answered)
        #expect(name == "example.com")
        #expect(chain.isEmpty)
        #expect(answers == ["93.184.216.34 120 0", "93.184.216.35 90 0"])
    }

    @Test func cnameChainCompressionAndCase() {
        let (o, name, chain, answers) = dnsParse(Self.cdnAnswer())
        #expect(o == .answered)
        #expect(name == "www.example.com")
        #expect(chain == ["edge.cdn.net"])
        // TTLs: the smallest on the path (CNAME 60 caps the A's 300).
        #expect(answers == ["192.0.2.7 60 1", "2001:db8::7 30 1"])
    }

    @Test func tcpFraming() {
        let m = Self.cdnAnswer()
        let framed = TestPackets.be16(UInt16(m.count)) + m
        #expect(dnsParse(framed, tcp: true).3 == ["192.0.2.7 60 1", "2001:db8::7 30 1"])
        for n in 0..<framed.count {
            #expect(dnsParse(Array(framed[0..<n]), tcp: true).0 == .failed(.incompleteTCP), "prefix \(n)")
        }
        // Bytes after the message (a second pipelined answer) are ignored.
        #expect(dnsParse(framed + [0, 5, 1, 2], tcp: true).0 == .answered)
    }

    /// From a parsed packet: UDP and TCP from port 53 are answers, anything else is not.
    @Test func fromParsedPackets() throws {
        let m = Self.cdnAnswer()
        let p = DNSAnswers()
        func outcome(_ packet: [UInt8]) throws -> DNSAnswers.Outcome? {
            try packet.withUnsafeBytes { b in p.parse(response: try PacketParser.parse(b), in: b) }
        }
        let udp = TestPackets.ipv4(proto: 17, src: "9.9.9.9", dst: "10.99.0.2", payload: TestPackets.udp(sport: 53, dport: 40000, data: m))
        #expect(try outcome(udp) == .answered && p.answerCount == 2)
        let framed = TestPackets.be16(UInt16(m.count)) + m
        let tcp = TestPackets.ipv6(proto: 6, src: "2001:db8::53", dst: "fd99::2",
                                   payload: TestPackets.tcp(sport: 53, dport: 40001, flags: [.ack, .psh], data: framed))
        #expect(try outcome(tcp) == .answered && p.answerCount == 2)
        let half = TestPackets.ipv4(proto: 6, src: "9.9.9.9", dst: "10.99.0.2",
                                    payload: TestPackets.tcp(sport: 53, dport: 40001, flags: [.ack], data: Array(framed[0..<40])))
        #expect(try outcome(half) == .failed(.incompleteTCP))
        let ack = TestPackets.ipv4(proto: 6, src: "9.9.9.9", dst: "10.99.0.2", payload: TestPackets.tcp(sport: 53, dport: 40001, flags: [.ack]))
        #expect(try outcome(ack) == nil)
        let query = TestPackets.ipv4(proto: 17, src: "10.99.0.2", dst: "9.9.9.9", payload: TestPackets.udp(sport: 40000, dport: 53, data: m))
        #expect(try outcome(query) == nil)
    }

    @Test func everyTruncationIsCounted() {
        let m = Self.cdnAnswer()
        for n in 0..<m.count {
            #expect(dnsParse(Array(m[0..<n])).0 == .failed(.truncated), "prefix \(n)")
        }
    }

    @Test func truncatedFlagKeepsWhatIsComplete() {
        var m = Self.cdnAnswer()
        m[2] |= 0x02  // TC
        // Cut inside the third record: the CNAME and the A are kept.
        let cut = Array(m[0..<(m.count - 30)])
        let (o, _, chain, answers) = dnsParse(cut)
        #expect(o == .answered)
        #expect(chain == ["edge.cdn.net"])
        #expect(answers == ["192.0.2.7 60 1"])
    }

    @Test func headerFailures() {
        var m = Self.cdnAnswer()
        m[2] &= 0x7F  // QR = 0
        #expect(dnsParse(m).0 == .failed(.notResponse))
        m = Self.cdnAnswer()
        m[2] |= 0x10  // opcode 2 (STATUS)
        #expect(dnsParse(m).0 == .failed(.notResponse))
        m = Self.cdnAnswer()
        m[5] = 2
        #expect(dnsParse(m).0 == .failed(.questionCount))
        m[5] = 0
        #expect(dnsParse(m).0 == .failed(.questionCount))
        m = Self.cdnAnswer()
        m[3] = (m[3] & 0xF0) | 3  // NXDOMAIN
        #expect(dnsParse(m).0 == .failed(.errorResponse))
    }

    @Test func compressionLoopsAndBadPointers() {
        // A pointer to itself.
        var b = DNSBuilder(answers: 0)
        b.bytes += DNSBuilder.pointer(12) + [0, 1, 0, 1]
        #expect(dnsParse(b.bytes).0 == .failed(.compressionLoop))
        // A forward pointer (to the question's own type field), and two names pointing at each other.
        b = DNSBuilder(answers: 0)
        b.bytes += DNSBuilder.pointer(14) + [0, 1, 0, 1]
        #expect(dnsParse(b.bytes).0 == .failed(.compressionLoop))
        b = DNSBuilder(answers: 1)
        b.bytes += [1, 0x61] + DNSBuilder.pointer(20) + [0, 1, 0, 1]  // question "a" -> 20
        b.bytes += [1, 0x62] + DNSBuilder.pointer(12)  // at 20: "b" -> 12 (backwards, so fine)...
        b.bytes += [0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        #expect(dnsParse(b.bytes).0 == .failed(.compressionLoop))  // ...but the question's pointer was forward
        // Past the end.
        b = DNSBuilder(answers: 1)
        let q = b.question("a.example")
        b.record(owner: DNSBuilder.pointer(4000), type: 1, data: [1, 2, 3, 4])
        #expect(dnsParse(b.bytes).0 == .failed(.pointerOutOfBounds))
        // Inside a CNAME's data.
        b = DNSBuilder(answers: 1)
        b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 5, data: [3, 0x77, 0x77, 0x77] + DNSBuilder.pointer(0x3FFF))
        #expect(dnsParse(b.bytes).0 == .failed(.pointerOutOfBounds))
        // A chain of backward pointers is fine, however long, while it stays under 256 bytes:
        // the fragments ride in a record of a type we skip, the A record's owner points at the last.
        b = DNSBuilder(answers: 2)
        let first = b.question("z")
        var fragments: [UInt8] = []
        var prev = first
        let dataAt = b.bytes.count + 12
        for k in 0..<20 {
            let at = dataAt + k * 4
            fragments += [1, 0x79] + DNSBuilder.pointer(prev)
            prev = at
        }
        b.record(owner: DNSBuilder.pointer(first), type: 16, data: fragments)
        b.record(owner: DNSBuilder.pointer(prev), type: 1, data: [1, 2, 3, 4])
        #expect(dnsParse(b.bytes).0 == .answered)
        #expect(dnsParse(b.bytes).3 == [])  // y.y.….z is not the query name "z"
    }

    @Test func badLabelsAndNames() {
        var b = DNSBuilder(answers: 0)
        b.bytes += [0x41, 0] + [0, 1, 0, 1]  // extended label type 0x40
        #expect(dnsParse(b.bytes).0 == .failed(.badLabel))
        b = DNSBuilder(answers: 0)
        b.bytes += [0x81, 0] + [0, 1, 0, 1]
        #expect(dnsParse(b.bytes).0 == .failed(.badLabel))
        b = DNSBuilder(answers: 0)
        for _ in 0..<5 { b.bytes += [63] + [UInt8](repeating: 0x61, count: 63) }  // 320 bytes
        b.bytes += [0, 0, 1, 0, 1]
        #expect(dnsParse(b.bytes).0 == .failed(.nameTooLong))
        // Exactly 255 on the wire is allowed.
        b = DNSBuilder(answers: 0)
        for _ in 0..<3 { b.bytes += [63] + [UInt8](repeating: 0x61, count: 63) }
        b.bytes += [61] + [UInt8](repeating: 0x61, count: 61) + [0, 0, 1, 0, 1]
        #expect(dnsParse(b.bytes).0 == .answered)
    }

    @Test func badRecordData() {
        var b = DNSBuilder(answers: 1)
        let q = b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 1, data: [1, 2, 3, 4, 5])
        #expect(dnsParse(b.bytes).0 == .failed(.badRecordData))
        b = DNSBuilder(answers: 1)
        b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 28, data: [1, 2, 3, 4])
        #expect(dnsParse(b.bytes).0 == .failed(.badRecordData))
        // CNAME data with bytes after the name, or a name running past its data.
        b = DNSBuilder(answers: 1)
        b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 5, data: DNSBuilder.name("b.example") + [9])
        #expect(dnsParse(b.bytes).0 == .failed(.badRecordData))
        b = DNSBuilder(answers: 2)
        b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 5, data: [3, 0x62, 0x62])  // label runs past rdlength
        b.record(owner: DNSBuilder.pointer(q), type: 1, data: [1, 2, 3, 4])
        #expect(dnsParse(b.bytes).0 == .failed(.badRecordData))
    }

    @Test func otherClassesTypesAndSectionsIgnored() {
        var b = DNSBuilder(answers: 3, authority: 1)
        let q = b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 1, klass: 3, data: [1, 1, 1, 1])  // CHAOS
        b.record(owner: DNSBuilder.pointer(q), type: 15, data: [0, 10] + DNSBuilder.name("mx.example"))  // MX
        b.record(owner: DNSBuilder.pointer(q), type: 1, ttl: 0x8000_0001, data: [2, 2, 2, 2])  // TTL top bit: 0
        b.record(owner: DNSBuilder.pointer(q), type: 1, ttl: 5, data: [3, 3, 3, 3])  // authority section
        #expect(dnsParse(b.bytes).3 == ["2.2.2.2 0 0", "3.3.3.3 5 0"])
        // Additional records are never read.
        var c = DNSBuilder(answers: 0)
        c.bytes[11] = 1  // ARCOUNT
        c.question("a.example")
        c.record(owner: DNSBuilder.pointer(12), type: 1, data: [4, 4, 4, 4])
        #expect(dnsParse(c.bytes).3 == [])
    }

    /// Records of other types do not use up the parser's room: 200 TXT records, then the A.
    @Test func manySkippedRecords() {
        var b = DNSBuilder(answers: 201)
        let q = b.question("txt.example")
        for _ in 0..<200 { b.record(owner: DNSBuilder.pointer(q), type: 16, data: [3, 0x61, 0x62, 0x63]) }
        b.record(owner: DNSBuilder.pointer(q), type: 1, data: [7, 7, 7, 7])
        #expect(dnsParse(b.bytes).3 == ["7.7.7.7 300 0"])
        // 70 A records: the first maxRecords (64) are looked at, the message still answers.
        var c = DNSBuilder(answers: 70)
        let q2 = c.question("a.example")
        for k in 0..<70 { c.record(owner: DNSBuilder.pointer(q2), type: 1, data: [10, 0, 1, UInt8(k)]) }
        #expect(dnsParse(c.bytes, parser: DNSAnswers(maxAnswers: 64)).3.count == 64)
    }

    @Test func chainsAreBoundedAndLoopFree() {
        // a -> b -> a: stops.
        var b = DNSBuilder(answers: 3)
        let q = b.question("a.example")
        b.record(owner: DNSBuilder.pointer(q), type: 5, data: DNSBuilder.name("b.example"))
        b.record(owner: DNSBuilder.name("b.example"), type: 5, data: DNSBuilder.name("a.example"))
        b.record(owner: DNSBuilder.name("b.example"), type: 1, data: [5, 5, 5, 5])
        let (o, _, chain, answers) = dnsParse(b.bytes)
        #expect(o == .answered && chain == ["b.example"] && answers == ["5.5.5.5 300 1"])
        // A chain of 12 with maxChain 3: the address at the end is not reached.
        b = DNSBuilder(answers: 13)
        b.question("n0.example")
        for k in 0..<12 { b.record(owner: DNSBuilder.name("n\(k).example"), type: 5, data: DNSBuilder.name("n\(k + 1).example")) }
        b.record(owner: DNSBuilder.name("n12.example"), type: 1, data: [9, 9, 9, 9])
        let short = dnsParse(b.bytes, parser: DNSAnswers(maxChain: 3))
        #expect(short.2 == ["n1.example", "n2.example", "n3.example"] && short.3.isEmpty)
        let long = dnsParse(b.bytes, parser: DNSAnswers(maxChain: 12))
        #expect(long.2.count == 12 && long.3 == ["9.9.9.9 300 12"])
    }

    @Test func answerLimit() {
        var b = DNSBuilder(answers: 40)
        let q = b.question("many.example")
        for k in 0..<40 { b.record(owner: DNSBuilder.pointer(q), type: 1, data: [10, 0, 0, UInt8(k)]) }
        let r = dnsParse(b.bytes, parser: DNSAnswers(maxAnswers: 8))
        #expect(r.3.count == 8 && r.3.first == "10.0.0.0 300 0")
    }

    @Test func parserIsReusable() {
        let p = DNSAnswers()
        #expect(dnsParse(Self.cdnAnswer(), parser: p).3.count == 2)
        #expect(dnsParse([1, 2, 3], parser: p).0 == .failed(.truncated))
        #expect(p.answerCount == 0 && p.chainCount == 0 && p.queryName.isEmpty)
        #expect(dnsParse(Self.cdnAnswer(), parser: p).3.count == 2)
    }

    @Test func randomCorruptionNeverCrashes() {
        var rng = SplitMix(seed: 1035)
        let base = Self.cdnAnswer()
        let p = DNSAnswers()
        var outcomes: Set<String> = []
        for _ in 0..<20_000 {
            var m = base
            for _ in 0..<(1 + Int(rng.next() % 4)) { m[Int(rng.next() % UInt64(m.count))] = UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 4 == 0 { m = Array(m[0..<Int(rng.next() % UInt64(m.count))]) }
            let r = dnsParse(m, parser: p)
            outcomes.insert("\(r.0)")
            if r.0 == .answered {
                #expect(p.queryName.count <= 253)
                #expect(p.answerCount <= p.maxAnswers && p.chainCount <= p.maxChain)
            }
        }
        #expect(outcomes.count >= 5)  // the corruption reached several distinct reasons
    }
}
