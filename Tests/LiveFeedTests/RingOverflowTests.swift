import Core
import Testing
@testable import LiveFeed

@Suite struct RingOverflowTests {
    @Test func fullRingDropsAndCountsWithoutClobbering() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 4)
        let consumer = try RingConsumer(path: producer.path)
        let results = (0..<7).map { producer.publish(sampleRecord(UInt64($0))) }
        #expect(results == [true, true, true, true, false, false, false])
        #expect(producer.dropped == 3)
        #expect(consumer.dropped == 3)
        #expect(producer.published == 4)
        // The four unread slots still hold the first four records.
        #expect(consumer.read() == (0..<4).map { sampleRecord(UInt64($0)) })
        // Reading freed the slots: publishing works again, in order.
        #expect(producer.publish(sampleRecord(10)))
        #expect(consumer.read() == [sampleRecord(10)])
        #expect(producer.dropped == 3)
    }

    @Test func partialReadFreesOnlyReadSlots() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 4)
        let consumer = try RingConsumer(path: producer.path)
        for i in 0..<4 { producer.publish(sampleRecord(UInt64(i))) }
        #expect(consumer.read(max: 1) == [sampleRecord(0)])
        #expect(producer.publish(sampleRecord(4)))
        #expect(!producer.publish(sampleRecord(5)))
        #expect(consumer.read() == (1...4).map { sampleRecord(UInt64($0)) })
    }

    @Test func batchPublishDropsTheTailOfAnOversizedBatch() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: producer.path)
        let batch = (0..<12).map { sampleRecord(UInt64($0)) }
        #expect(batch.withUnsafeBufferPointer { producer.publish(batch: $0) } == 8)
        #expect(producer.dropped == 4)
        #expect(consumer.read() == Array(batch.prefix(8)))
    }

    @Test func closedProducerPublishesNothing() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 4)
        let consumer = try RingConsumer(path: producer.path)
        producer.close()
        #expect(!producer.publish(sampleRecord(1)))
        #expect(consumer.read().isEmpty)
        #expect(consumer.wait(timeoutNanoseconds: 0) == .timedOut)
        #expect(consumer.status == .producerClosed)
    }
}
