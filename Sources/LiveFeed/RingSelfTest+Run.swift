import Core
import CShims
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// The two ends of the ring stress check, shared by `tunnelbench ring`, the ThreadSanitizer
/// driver (fuzz/ring/tsan-stress.sh) and the tests.
extension RingSelfTest {
    /// What a producer run did.
    public struct ProducerReport: Sendable {
        /// Records offered (published + dropped).
        public var offered: UInt64
        /// Records dropped because the ring was full.
        public var dropped: UInt64
        /// Seconds from the first publish to the last.
        public var seconds: Double
    }

    /// What a consumer run saw.
    public struct ConsumerReport: Sendable {
        /// Records read.
        public var received: UInt64
        /// The producer's drop count for the ring.
        public var dropped: UInt64
        /// Records whose checksum failed (torn or corrupt).
        public var corrupt: UInt64
        /// Records whose sequence was not above the previous one.
        public var reordered: UInt64
        /// Seconds from the first record read to the last.
        public var seconds: Double

        /// Whether the run proves the ring sound for `count` records.
        public func isClean(count: UInt64) -> Bool { corrupt == 0 && reordered == 0 && received + dropped == count }
    }

    /// Creates a ring in `directory`, waits (up to 30 s) for a consumer, publishes `count`
    /// self-checking records in batches of `batch`, then closes the ring. With `lossless` it waits
    /// for room instead of dropping (measures the ring, not the drop policy).
    public static func runProducer(directory: String, count: UInt64, slots: Int, batch: Int,
                                   lossless: Bool) throws(RingError) -> ProducerReport {
        let producer = try RingProducer(directory: directory, slotCount: slots)
        let waitStart = SystemClock().monotonicNanoseconds()
        while !producer.hasConsumer, SystemClock().monotonicNanoseconds() - waitStart < 30_000_000_000 {
            Sys.sleep(nanoseconds: 1_000_000)
        }
        let buffer = UnsafeMutableBufferPointer<LiveRecord>.allocate(capacity: max(1, batch))
        defer { buffer.deallocate() }
        var sequence: UInt64 = 0
        let start = SystemClock().monotonicNanoseconds()
        while sequence < count {
            let n = Int(min(UInt64(buffer.count), count - sequence))
            for i in 0..<n { buffer[i] = record(sequence: sequence + UInt64(i)) }
            if lossless {
                var spins = 0
                while producer.freeSlots < n {
                    spins += 1
                    if spins % 64 == 0 { sched_yield() } else { tv_cpu_relax() }  // let a descheduled consumer run
                }
            }
            producer.publish(batch: UnsafeBufferPointer(rebasing: buffer[0..<n]))
            sequence += UInt64(n)
        }
        let seconds = Double(SystemClock().monotonicNanoseconds() - start) / 1e9
        let report = ProducerReport(offered: count, dropped: producer.dropped, seconds: seconds)
        producer.close()
        return report
    }

    /// Attaches to `path` (waiting up to 30 s for it to appear) and reads until the producer has
    /// closed the ring and it is drained, checking every record.
    public static func runConsumer(path: String) throws(RingError) -> ConsumerReport {
        let waitStart = SystemClock().monotonicNanoseconds()
        var attached: Result<RingConsumer, RingError> = Result { () throws(RingError) in try RingConsumer(path: path) }
        while case .failure(.notFound) = attached, SystemClock().monotonicNanoseconds() - waitStart < 30_000_000_000 {
            Sys.sleep(nanoseconds: 1_000_000)
            attached = Result { () throws(RingError) in try RingConsumer(path: path) }
        }
        let consumer = try attached.get()
        let buffer = UnsafeMutableBufferPointer<LiveRecord>.allocate(capacity: 4096)
        defer { buffer.deallocate() }
        var report = ConsumerReport(received: 0, dropped: 0, corrupt: 0, reordered: 0, seconds: 0)
        var last: UInt64? = nil
        var first: UInt64 = 0
        var lastRead: UInt64 = 0
        while true {
            let n = consumer.read(into: buffer)
            if n == 0 {
                if consumer.isProducerClosed, consumer.available == 0 { break }
                if consumer.wait(timeoutNanoseconds: 100_000_000) == .timedOut,
                   consumer.status == .producerClosed, consumer.available == 0 { break }
                continue
            }
            if report.received == 0 { first = SystemClock().monotonicNanoseconds() }
            for i in 0..<n {
                let r = buffer[i]
                if !isIntact(r) { report.corrupt += 1 }
                if let l = last, r.flowID <= l { report.reordered += 1 }
                last = r.flowID
            }
            report.received += UInt64(n)
            lastRead = SystemClock().monotonicNanoseconds()
        }
        report.seconds = Double(lastRead &- first) / 1e9
        report.dropped = consumer.dropped
        return report
    }
}
