import Core
import Foundation
import Testing
@testable import LiveFeed

@Suite struct RingRoundTripTests {
    @Test func recordsArriveInOrderAndUnchanged() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: producer.path)
        var sent: [LiveRecord] = []
        var received: [LiveRecord] = []
        // 50 rounds of 0...7 records wrap the 8-slot ring many times.
        var n: UInt64 = 0
        for round in 0..<50 {
            for _ in 0..<(round % 8) {
                let r = sampleRecord(n, v6: n % 3 == 0)
                #expect(producer.publish(r))
                sent.append(r)
                n += 1
            }
            producer.endBatch()
            received += consumer.read(max: 5)
        }
        received += consumer.read()
        #expect(received == sent)
        #expect(producer.dropped == 0)
        #expect(consumer.dropped == 0)
        #expect(consumer.generation == producer.generation)
    }

    /// A flow-host record carries its host through the slot: up to 64 bytes, a longer name cut
    /// and marked; other kinds have none.
    @Test func flowHostRecordsCarryTheHost() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: producer.path)
        let long = String(repeating: "a", count: 60) + ".example.com"  // 72 bytes
        let names = ["allowed.test", "", String(repeating: "x", count: 64), long]
        var sent: [LiveRecord] = []
        for (i, name) in names.enumerated() {
            var r = LiveRecord.flowHost(flowID: UInt64(100 + i), peerIndex: 2, verdict: i == 3 ? .block : .allow, host: name)
            r.timeNanoseconds = 1_000 + UInt64(i)
            #expect(producer.publish(r))
            sent.append(r)
        }
        producer.endBatch()
        let got = consumer.read()
        #expect(got == sent)
        #expect(got.map(\.kind) == Array(repeating: LiveEventKind.flowHost, count: 4))
        #expect(got.map { $0.hostName } == ["allowed.test", "", String(repeating: "x", count: 64), String(long.prefix(64)) + "…"])
        #expect(got.map(\.hostTruncated) == [false, false, false, true])
        #expect(got[3].verdict == .block && got[3].flowID == 103 && got[3].peerIndex == 2)
        #expect(LiveEventKind.flowHost.description == "flow-host")
        #expect(sampleRecord(1).hostName == nil)
    }

    @Test func batchPublishIsReadInOrder() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 16)
        let consumer = try RingConsumer(path: producer.path)
        let batch = (0..<10).map { sampleRecord($0) }
        let written = batch.withUnsafeBufferPointer { producer.publish(batch: $0) }
        #expect(written == 10)
        #expect(consumer.available == 10)
        #expect(consumer.read() == batch)
        #expect(consumer.available == 0)
    }

    @Test func slotLayoutMatchesTheDocumentedOffsets() throws {
        var r = LiveRecord()
        r.timeNanoseconds = 0x0102_0304_0506_0708
        r.flowID = 0x1112_1314_1516_1718
        r.ipVersion = 4
        r.sourceLow = 0x0A63_0002        // 10.99.0.2
        r.destinationLow = 0xC0A8_0105   // 192.168.1.5
        r.sourcePort = 0x9C40
        r.destinationPort = 443
        r.length = 0x0000_05DC
        r.kind = .flowClose
        r.direction = .in
        r.ipProtocol = 17
        r.tcpFlags = 0x12
        r.verdict = .reject
        r.ruleIndex = 7
        r.peerIndex = 9
        r.peerName = LivePeerName("bob")
        r.captureFileSequence = 42
        r.captureOffset = 0x2000
        r.detail = 5
        r.detail2 = 6
        let b = r.slotBytes
        #expect(b.count == 128)
        #expect(Array(b[0..<8]) == [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01])
        #expect(Array(b[8..<16]) == [0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11])
        #expect(Array(b[16..<32]) == [10, 99, 0, 2] + [UInt8](repeating: 0, count: 12))
        #expect(Array(b[32..<48]) == [192, 168, 1, 5] + [UInt8](repeating: 0, count: 12))
        #expect(Array(b[48..<52]) == [0x40, 0x9C, 0xBB, 0x01])
        #expect(Array(b[52..<56]) == [0xDC, 0x05, 0, 0])
        #expect(Array(b[56..<64]) == [2, 1, 17, 4, 0x12, 2, 0, 0])
        #expect(Array(b[64..<72]) == [7, 0, 0, 0, 9, 0, 0, 0])
        #expect(Array(b[72..<88]) == Array("bob".utf8) + [UInt8](repeating: 0, count: 13))
        #expect(Array(b[88..<96]) == [42, 0, 0, 0, 0, 0, 0, 0])
        #expect(Array(b[96..<104]) == [0, 0x20, 0, 0, 0, 0, 0, 0])
        #expect(b[104] == 5 && b[112] == 6)
        #expect(Array(b[120..<128]) == [UInt8](repeating: 0, count: 8))
        #expect(LiveRecord(slotBytes: b) == r)
        #expect(LiveRecord(slotBytes: Array(b.prefix(127))) == nil)
    }

    @Test func ipv6AddressesAreWrittenInNetworkOrder() throws {
        var r = LiveRecord()
        r.ipVersion = 6
        r.sourceHigh = 0xFD99_0000_0000_0000
        r.sourceLow = 0x0000_0000_0000_0002
        let b = r.slotBytes
        #expect(Array(b[16..<32]) == [0xFD, 0x99] + [UInt8](repeating: 0, count: 13) + [2])
        #expect(LiveRecord(slotBytes: b) == r)
    }

    @Test func peerNamesAreTruncatedOnCharacterBoundaries() {
        #expect(LivePeerName("alice").description == "alice")
        #expect(LivePeerName("").description == "")
        #expect(LivePeerName("0123456789abcdefXYZ").description == "0123456789abcdef")
        // "é" is two bytes: 15 ASCII + é does not fit in 16, so it is left out whole.
        #expect(LivePeerName("012345678901234é").description == "012345678901234")
        #expect(LivePeerName("01234567890123é").description == "01234567890123é")
    }

    @Test func headerCarriesGeometryAndIdentity() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 64)
        let data = try #require(FileManager.default.contents(atPath: producer.path))
        #expect(data.count == 256 + 64 * 128)
        let bytes = [UInt8](data)
        #expect(Array(bytes[0..<4]) == Array("TVR1".utf8))
        func u32(_ o: Int) -> UInt32 { bytes[o..<o + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        func u64(_ o: Int) -> UInt64 { bytes[o..<o + 8].reversed().reduce(0) { $0 << 8 | UInt64($1) } }
        #expect(u32(4) == 1)
        #expect(u32(8) == 256)
        #expect(u32(12) == 128)
        #expect(u32(16) == 64)
        #expect(u64(24) == producer.generation)
        #expect(u32(32) == UInt32(getpid()))
        #expect(u64(40) > 1_600_000_000_000_000_000)
        #expect(!producer.hasConsumer)
        let consumer = try RingConsumer(path: producer.path)
        #expect(producer.hasConsumer)
        #expect(consumer.producerPID == getpid())
        #expect(consumer.slotCount == 64)
    }

    @Test func latestStartSkipsTheBacklog() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        producer.publish(sampleRecord(1))
        producer.publish(sampleRecord(2))
        let consumer = try RingConsumer(path: producer.path, start: .latest)
        #expect(consumer.available == 0)
        producer.publish(sampleRecord(3))
        #expect(consumer.read() == [sampleRecord(3)])
    }
}
