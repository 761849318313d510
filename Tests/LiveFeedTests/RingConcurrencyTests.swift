import Core
import CShims
import Foundation
import Testing
@testable import LiveFeed

/// Two threads, one ring: the in-process version of `tunnelbench ring stress` (ThreadSanitizer
/// sees this one; it cannot see across processes). docs/ring.md says how to run it under TSan.
/// `twoMappingsInTwoThreads` covers the two-mapping path (as across processes) without TSan.
@Suite struct RingConcurrencyTests {
    /// The producer publishes only once the consumer has announced it is waiting, so the record
    /// can only reach it through the futex wake-up; the futex word shows the producer issued it.
    @Test func waitingConsumerIsWokenByEndBatch() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: producer.path)
        let file = try #require(producer.file)
        let waiting = UnsafeRawPointer(file.pointer(RingLayout.waitingOffset))
        let futex = UnsafeRawPointer(file.pointer(RingLayout.futexOffset))
        let waitingAddress = Int(bitPattern: waiting)  // a pointer is not Sendable; its address is
        let thread = Thread {
            let waiting = UnsafeRawPointer(bitPattern: waitingAddress)!
            while tv_load_acquire_u32(waiting) == 0 { usleep(100) }
            producer.publish(sampleRecord(1))
            producer.endBatch()
        }
        thread.start()
        #expect(consumer.wait(timeoutNanoseconds: 60_000_000_000, pollNanoseconds: 60_000_000_000, spin: 0) == .ready)
        #expect(tv_load_acquire_u32(futex) == 1)    // exactly one wake for the batch
        #expect(tv_load_acquire_u32(waiting) == 0)
        #expect(consumer.read() == [sampleRecord(1)])
        producer.endBatch()                          // nothing new: no second wake
        #expect(tv_load_acquire_u32(futex) == 1)
    }

    /// Nobody waiting: a batch costs no wake-up at all.
    @Test func noWakeWhenNobodyWaits() throws {
        let dir = TemporaryDirectory()
        let producer = try RingProducer(directory: dir.path, slotCount: 8)
        let consumer = try RingConsumer(path: producer.path)
        for i in 0..<5 { producer.publish(sampleRecord(UInt64(i))) }
        producer.endBatch()
        let file = try #require(producer.file)
        #expect(tv_load_acquire_u32(UnsafeRawPointer(file.pointer(RingLayout.futexOffset))) == 0)
        #expect(consumer.read().count == 5)
    }

    /// The consumer reads through the producer's mapping: ThreadSanitizer tracks memory by
    /// virtual address and would see nothing across two mappings of the file. (Checked: with
    /// `head` stored relaxed instead of release, TSan reports a race in `LiveRecord(slot:)`.)
    @Test func twoThreadStressFindsNoTornOrReorderedRecord() throws {
        let dir = TemporaryDirectory()
        let total: UInt64 = 300_000
        let producer = try RingProducer(directory: dir.path, slotCount: 1024)
        let consumer = RingConsumer(sharingMappingOf: producer)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var batch = [LiveRecord](repeating: LiveRecord(), count: 32)
            var sequence: UInt64 = 0
            while sequence < total {
                let n = Int(min(32, total - sequence))
                for i in 0..<n { batch[i] = RingSelfTest.record(sequence: sequence + UInt64(i)) }
                _ = batch.withUnsafeBufferPointer { producer.publish(batch: UnsafeBufferPointer(rebasing: $0[0..<n])) }
                sequence += UInt64(n)
            }
            producer.close()
            done.signal()
        }
        thread.start()
        var buffer = [LiveRecord](repeating: LiveRecord(), count: 256)
        var received: UInt64 = 0
        var last: UInt64? = nil
        var bad = 0
        while true {
            let n = buffer.withUnsafeMutableBufferPointer { consumer.read(into: $0) }
            for r in buffer[0..<n] {
                if !RingSelfTest.isExact(r) || (last.map { r.flowID <= $0 } ?? false) { bad += 1 }
                last = r.flowID
            }
            received += UInt64(n)
            if n == 0 {
                if consumer.isProducerClosed, consumer.available == 0 { break }
                _ = consumer.wait(timeoutNanoseconds: 50_000_000)
            }
        }
        done.wait()
        #expect(bad == 0)
        #expect(received + consumer.dropped == total)
        #expect(received > 0)
    }

    @Test func twoMappingsInTwoThreads() throws {
        let dir = TemporaryDirectory()
        let total: UInt64 = 100_000
        let producer = try RingProducer(directory: dir.path, slotCount: 256)
        let consumer = try RingConsumer(path: producer.path)
        let thread = Thread {
            var sequence: UInt64 = 0
            while sequence < total {
                producer.publish(RingSelfTest.record(sequence: sequence))
                if sequence & 15 == 15 { producer.endBatch() }
                sequence += 1
            }
            producer.close()
        }
        thread.start()
        var received: UInt64 = 0
        var bad = 0
        var last: UInt64? = nil
        while true {
            let records = consumer.read(max: 100)
            for r in records {
                if !RingSelfTest.isExact(r) || (last.map { r.flowID <= $0 } ?? false) { bad += 1 }
                last = r.flowID
            }
            received += UInt64(records.count)
            if records.isEmpty {
                if consumer.isProducerClosed, consumer.available == 0 { break }
                _ = consumer.wait(timeoutNanoseconds: 50_000_000)
            }
        }
        #expect(bad == 0)
        #expect(received + consumer.dropped == total)
    }
}
