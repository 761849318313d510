// Two-process ring stress built with ThreadSanitizer (fuzz/ring/tsan-stress.sh). Compiled in one
// module with Sources/LiveFeed, because tunnelbench links the allocation counter, whose malloc
// replacement cannot coexist with TSan's allocator.
import Foundation

let args = CommandLine.arguments
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

switch args.dropFirst().first {
case "produce":
    let r = try RingSelfTest.runProducer(directory: args[2], count: UInt64(args[3])!, slots: 4096, batch: 64, lossless: false)
    print("produce: offered \(r.offered), dropped \(r.dropped), \(r.seconds) s")
case "consume":
    let r = try RingSelfTest.runConsumer(path: args[2])
    print("consume: received \(r.received), dropped \(r.dropped), corrupt \(r.corrupt), reordered \(r.reordered)")
    if !r.isClean(count: UInt64(args[3])!) { fail("consume: FAILED") }
case "stress":
    let count = args.count > 2 ? args[2] : "10000000"
    let dir = NSTemporaryDirectory() + "tsan-ring-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let exe = URL(fileURLWithPath: args[0])
    let producer = Process(), consumer = Process()
    producer.executableURL = exe
    producer.arguments = ["produce", dir, count]
    consumer.executableURL = exe
    consumer.arguments = ["consume", dir + "/live.ring", count]
    try producer.run()
    try consumer.run()
    producer.waitUntilExit()
    consumer.waitUntilExit()
    if producer.terminationStatus != 0 || consumer.terminationStatus != 0 { fail("stress: FAILED") }
    print("stress: ok")
case "threads":
    // Producer and consumer as two threads of this process sharing one mapping: TSan tracks
    // memory by virtual address, so this is the case it can fully check.
    let count = UInt64(args.count > 2 ? args[2] : "1000000")!
    let dir = NSTemporaryDirectory() + "tsan-ring-threads-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let ring = try RingProducer(directory: dir, slotCount: 1024)
    let consumer = RingConsumer(sharingMappingOf: ring)
    let producer = Thread {
        var batch = [LiveRecord](repeating: LiveRecord(), count: 64)
        var sequence: UInt64 = 0
        while sequence < count {
            for i in 0..<64 { batch[i] = RingSelfTest.record(sequence: sequence + UInt64(i)) }
            _ = batch.withUnsafeBufferPointer { ring.publish(batch: $0) }
            sequence += 64
        }
        ring.close()
    }
    producer.start()
    var buffer = [LiveRecord](repeating: LiveRecord(), count: 256)
    var received: UInt64 = 0, bad: UInt64 = 0, last: UInt64? = nil
    while true {
        let n = buffer.withUnsafeMutableBufferPointer { consumer.read(into: $0) }
        for r in buffer[0..<n] {
            if !RingSelfTest.isExact(r) || (last.map { r.flowID <= $0 } ?? false) { bad += 1 }
            last = r.flowID
        }
        received += UInt64(n)
        if n == 0 {
            if consumer.isProducerClosed && consumer.available == 0 { break }
            _ = consumer.wait(timeoutNanoseconds: 10_000_000)
        }
    }
    let total = (count + 63) / 64 * 64
    print("threads: received \(received), dropped \(consumer.dropped), bad \(bad)")
    if bad != 0 || received + consumer.dropped != total { fail("threads: FAILED") }
default:
    fail("usage: ring-stress-tsan stress [COUNT] | threads [COUNT] | produce DIR COUNT | consume PATH COUNT")
}
