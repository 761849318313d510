import Core
import Packet
import Testing
import TestSupport

/// DNS over TCP answers cut anywhere (RFC 7766 §8): the assembler hands out each message whole
/// and in order, whatever the segment boundaries, against the slow reference (the messages as
/// written); retransmissions are skipped, gaps and overlong messages reported, room bounded.
@Suite struct DNSStreamAssemblerTests {
    static let key = DNSStreamAssembler.Key(peer: 1, server: IPAddress("198.19.0.53")!, serverPort: 53,
                                            client: IPAddress("10.99.0.2")!, clientPort: 40000)

    /// `messages` length-prefixed back to back, as a server writes them.
    static func stream(_ messages: [[UInt8]]) -> [UInt8] {
        messages.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
    }

    /// Feeds `bytes` cut at `cuts` (sorted offsets), starting at sequence `isn`; returns what came out.
    static func feed(_ a: DNSStreamAssembler, _ bytes: [UInt8], cuts: [Int], isn: UInt32 = 1000,
                     key: DNSStreamAssembler.Key = key) -> (messages: [[UInt8]], problems: [DNSStreamAssembler.Problem])
    {
        var out: [[UInt8]] = []
        var problems: [DNSStreamAssembler.Problem] = []
        let bounds = [0] + cuts + [bytes.count]
        for k in 0..<(bounds.count - 1) {
            let piece = Array(bytes[bounds[k]..<bounds[k + 1]])
            let p = piece.withUnsafeBytes { b in
                a.feed(key, sequence: isn &+ UInt32(bounds[k]), payload: b) { out.append(Array($0)) }
            }
            if let p { problems.append(p) }
        }
        return (out, problems)
    }

    @Test func everySplitOfTwoAnswersGivesThemWhole() {
        let m1 = TestSupport.TestPackets.dnsResponse(name: "tracker.test", address: "198.19.0.77")
        let m2 = TestSupport.TestPackets.dnsResponse(id: 7, name: "b.example", address: "192.0.2.9")
        let bytes = Self.stream([m1, m2])
        for i in 0...bytes.count {
            for j in stride(from: i, through: bytes.count, by: 7) {
                let a = DNSStreamAssembler(streams: 2, maxMessage: 512)
                let (got, problems) = Self.feed(a, bytes, cuts: [i, j])
                #expect(got == [m1, m2], "cut at \(i), \(j)")
                #expect(problems.isEmpty)
                #expect(a.active == 0)
            }
        }
    }

    @Test func randomCutsAgainstTheMessagesAsWritten() {
        var rng = SplitMix(seed: 42)
        for round in 0..<300 {
            let count = 1 + Int(rng.next() % 4)
            let messages = (0..<count).map { i in
                (0..<(12 + Int(rng.next() % 300))).map { UInt8(truncatingIfNeeded: $0 &+ i &+ round) }
            }
            let bytes = Self.stream(messages)
            let cuts = (0..<Int(rng.next() % 6)).map { _ in Int(rng.next() % UInt64(bytes.count + 1)) }.sorted()
            let isn = UInt32(truncatingIfNeeded: rng.next())  // wraps around 2^32 sometimes
            let a = DNSStreamAssembler(streams: 2, maxMessage: 1024)
            let (got, problems) = Self.feed(a, bytes, cuts: cuts, isn: isn)
            #expect(got == messages && problems.isEmpty, "round \(round)")
        }
    }

    @Test func retransmissionsAreSkippedGapsReported() {
        let m = TestSupport.TestPackets.dnsResponse(name: "tracker.test", address: "198.19.0.77")
        let bytes = Self.stream([m])
        let a = DNSStreamAssembler(streams: 2, maxMessage: 512)
        var got: [[UInt8]] = []
        func send(_ from: Int, _ to: Int) -> DNSStreamAssembler.Problem? {
            Array(bytes[from..<to]).withUnsafeBytes { b in
                a.feed(Self.key, sequence: 1000 + UInt32(from), payload: b) { got.append(Array($0)) }
            }
        }
        #expect(send(0, 10) == nil)
        #expect(send(0, 10) == nil)  // the same segment again
        #expect(send(5, 20) == nil)  // overlapping: the new bytes are taken
        #expect(send(20, bytes.count) == nil)
        #expect(got == [m])
        // A gap: the partial message is dropped and reported; nothing wrong comes out.
        got = []
        #expect(send(0, 10) == nil)
        #expect(send(15, 20) == .gap)
        #expect(send(20, bytes.count) == nil)  // the rest of that connection is skipped, reported once
        #expect(got.isEmpty && a.active == 1)
        #expect([UInt8]().withUnsafeBytes { a.feed(Self.key, sequence: 1000 + UInt32(bytes.count), payload: $0, closing: true) { _ in } } == nil)
        #expect(a.active == 0)
    }

    @Test func boundsAreKept() {
        let a = DNSStreamAssembler(streams: 2, maxMessage: 100)
        var got = 0
        let long = [UInt8(0), 200] + [UInt8](repeating: 1, count: 50)
        #expect(long.withUnsafeBytes { a.feed(Self.key, sequence: 1, payload: $0) { _ in got += 1 } } == .tooLong)
        #expect(a.active == 0 && got == 0)
        // Three connections with a partial message each in room for two: the oldest goes.
        let part = [UInt8(0), 50, 1, 2, 3]
        var keys: [DNSStreamAssembler.Key] = []
        for port in UInt16(1)...3 {
            var k = Self.key
            k.clientPort = port
            keys.append(k)
            let p = part.withUnsafeBytes { a.feed(k, sequence: 1, payload: $0) { _ in got += 1 } }
            #expect(p == (port == 3 ? .evicted : nil))
        }
        #expect(a.active == 2)
        // A FIN forgets the connection; a removed peer forgets its own.
        #expect([UInt8]().withUnsafeBytes { a.feed(keys[2], sequence: 6, payload: $0, closing: true) { _ in } } == nil)
        #expect(a.active == 1)
        a.forget(peer: 1)
        #expect(a.active == 0 && got == 0)
    }
}
