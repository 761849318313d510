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
default:
    fail("usage: ring-stress-tsan stress [COUNT] | produce DIR COUNT | consume PATH COUNT")
}
