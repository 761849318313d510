import Core
import Foundation
import Testing
@testable import LiveFeed

@Suite struct RingGenerationTests {
    @Test func recreatedRingBumpsGenerationAndConsumerFollows() throws {
        let dir = TemporaryDirectory()
        let first = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: first.path)
        first.publish(sampleRecord(1))
        first.publish(sampleRecord(2))
        let second = try RingProducer(directory: dir.path, slotCount: 16)
        #expect(second.generation == first.generation + 1)
        second.publish(sampleRecord(3))
        // The old file is drained first…
        #expect(consumer.wait(timeoutNanoseconds: 1_000_000_000) == .ready)
        #expect(consumer.read() == [sampleRecord(1), sampleRecord(2)])
        // …then the consumer moves to the new one by itself.
        #expect(consumer.wait(timeoutNanoseconds: 1_000_000_000) == .reattached(generation: second.generation))
        #expect(consumer.generation == second.generation)
        #expect(consumer.slotCount == 16)
        #expect(consumer.read() == [sampleRecord(3)])
        #expect(second.hasConsumer)
    }

    @Test func consumerSurvivesTheFileDisappearing() throws {
        let dir = TemporaryDirectory()
        var producer: RingProducer? = try RingProducer(directory: dir.path, slotCount: 8)
        let path = producer!.path
        let oldGeneration = producer!.generation
        let consumer = try RingConsumer(path: path)
        producer!.close()
        producer = nil
        try FileManager.default.removeItem(atPath: path)
        #expect(consumer.wait(timeoutNanoseconds: 20_000_000, pollNanoseconds: 5_000_000) == .timedOut)
        #expect(consumer.status == .fileMissing)
        // A restarted producer finds no previous file: its generation comes from the clock.
        let restarted = try RingProducer(directory: dir.path, slotCount: 8)
        #expect(restarted.generation != oldGeneration)
        restarted.publish(sampleRecord(7))
        #expect(consumer.wait(timeoutNanoseconds: 1_000_000_000, pollNanoseconds: 5_000_000) == .reattached(generation: restarted.generation))
        #expect(consumer.status == .attached)
        #expect(consumer.read() == [sampleRecord(7)])
    }

    @Test func invalidReplacementIsReportedAndThenFollowed() throws {
        let dir = TemporaryDirectory()
        let first = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: first.path)
        first.close()
        try FileManager.default.removeItem(atPath: first.path)
        try Data("not a ring, not at all, but long enough to hold a header? no".utf8).write(to: URL(fileURLWithPath: first.path))
        #expect(consumer.wait(timeoutNanoseconds: 10_000_000, pollNanoseconds: 2_000_000) == .timedOut)
        guard case .rejected(.truncated) = consumer.status else {
            Issue.record("status \(consumer.status)")
            return
        }
        let second = try RingProducer(directory: dir.path, slotCount: 8)
        #expect(consumer.wait(timeoutNanoseconds: 1_000_000_000, pollNanoseconds: 2_000_000) == .reattached(generation: second.generation))
    }
}
