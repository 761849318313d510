// `tunnelbench ring produce|consume|stress`: the live ring across two processes.
//
// `stress` spawns a consumer and a producer (this same executable) on a ring in a temporary
// directory. Every record carries a sequence number and a checksum (RingSelfTest); the consumer
// exits non-zero on a torn, corrupt or reordered record, or when received + dropped != count.
import Core
import Foundation
import Capture
import LiveFeed
import Runtime

enum RingBench {
    static let usage = """
        usage: tunnelbench ring stress  [--count N] [--slots S] [--batch B] [--lossless]
               tunnelbench ring produce --dir DIR [--count N] [--slots S] [--batch B] [--lossless]
               tunnelbench ring consume --path FILE [--count N]
               tunnelbench ring single  [--count N] [--slots S] [--batch B]   (both ends, one thread: ns per step)
               tunnelbench ring idle    [--count N] [--slots S]   (publish cost per packet when nobody watches)
               tunnelbench ring capture [--count N]   (CaptureWriter: 1400-byte packets, full detail, packets/s)
          --lossless  the producer waits for room instead of dropping (throughput of the ring itself)
        """

    struct Options {
        var count: UInt64 = 10_000_000
        var slots = 65_536
        var batch = 256
        var lossless = false
        var dir = ""
        var path = ""

        init(_ args: ArraySlice<String>) throws {
            var i = args.startIndex
            func value() throws -> String {
                i += 1
                guard i < args.endIndex else { throw BenchError.usage("\(args[i - 1]) needs a value") }
                return args[i]
            }
            while i < args.endIndex {
                switch args[i] {
                case "--count": count = UInt64(try value()) ?? 0
                case "--slots": slots = Int(try value()) ?? 0
                case "--batch": batch = max(1, Int(try value()) ?? 1)
                case "--lossless": lossless = true
                case "--dir": dir = try value()
                case "--path": path = try value()
                default: throw BenchError.usage("unknown option \(args[i])")
                }
                i += 1
            }
        }
    }

    struct BenchError: Error, CustomStringConvertible {
        let description: String
        static func usage(_ s: String) -> BenchError { BenchError(description: "\(s)\n\(RingBench.usage)") }
    }

    static func run(_ args: [String]) throws {
        guard let mode = args.first else { print(usage); return }
        let options = try Options(args.dropFirst())
        switch mode {
        case "produce": try produce(options)
        case "consume": try consume(options)
        case "stress": try stress(options)
        case "single": try single(options)
        case "capture": try capture(options)
        case "idle": try idle(options)
        default: throw BenchError.usage("unknown mode \(mode)")
        }
    }

    static func now() -> Double { Double(SystemClock().monotonicNanoseconds()) / 1e9 }

    static func produce(_ o: Options) throws {
        let allocationsBefore = allocationCount()
        let r = try RingSelfTest.runProducer(directory: o.dir, count: o.count, slots: o.slots, batch: o.batch, lossless: o.lossless)
        let allocations = allocationCount() - allocationsBefore
        print(String(format: "produce: %llu records in %.3f s = %.2f M records/s offered, dropped %llu, allocations %llu (ring setup included)",
                     r.offered, r.seconds, Double(r.offered) / r.seconds / 1e6, r.dropped, allocations))
    }

    static func consume(_ o: Options) throws {
        let r = try RingSelfTest.runConsumer(path: o.path)
        print(String(format: "consume: received %llu in %.3f s = %.2f M records/s, dropped %llu, torn/corrupt %llu, reordered %llu",
                     r.received, r.seconds, Double(r.received) / r.seconds / 1e6, r.dropped, r.corrupt, r.reordered))
        guard r.isClean(count: o.count) else {
            print("consume: FAILED (received + dropped = \(r.received + r.dropped), expected \(o.count))")
            exit(1)
        }
    }

    /// What the data path pays per packet when no consumer reads: the ring fills once, then
    /// every publish is a counted drop; `endBatch` every 64 packets.
    static func idle(_ o: Options) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ring-idle-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let producer = try RingProducer(directory: dir, slotCount: o.slots)
        var record = RingSelfTest.record(sequence: 1)
        let allocationsBefore = allocationCount()
        let start = now()
        for i in 0..<o.count {
            record.flowID = i
            producer.publish(record)
            if i & 63 == 63 { producer.endBatch() }
        }
        let elapsed = now() - start
        let allocations = allocationCount() - allocationsBefore
        print(String(format: "idle: %llu publishes, nobody watching: %.2f ns each, dropped %llu, allocations %llu",
                     o.count, elapsed / Double(o.count) * 1e9, producer.dropped, allocations))
    }

    /// Both ends on one thread, alternating batches: the CPU cost per record of each side.
    static func single(_ o: Options) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ring-single-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let producer = try RingProducer(directory: dir, slotCount: o.slots)
        let consumer = try RingConsumer(path: producer.path)
        var batch = [LiveRecord](repeating: LiveRecord(), count: o.batch)
        var out = [LiveRecord](repeating: LiveRecord(), count: o.batch)
        var generate = 0.0, publish = 0.0, read = 0.0, check = 0.0
        var sequence: UInt64 = 0
        var bad = 0
        batch.withUnsafeMutableBufferPointer { buffer in
            out.withUnsafeMutableBufferPointer { outBuffer in
                while sequence < o.count {
                    let t0 = now()
                    for i in 0..<buffer.count { buffer[i] = RingSelfTest.record(sequence: sequence + UInt64(i)) }
                    let t1 = now()
                    producer.publish(batch: UnsafeBufferPointer(buffer))
                    let t2 = now()
                    let n = consumer.read(into: outBuffer)
                    let t3 = now()
                    for i in 0..<n where !RingSelfTest.isIntact(outBuffer[i]) { bad += 1 }
                    let t4 = now()
                    generate += t1 - t0; publish += t2 - t1; read += t3 - t2; check += t4 - t3
                    sequence += UInt64(buffer.count)
                }
            }
        }
        let per = { (t: Double) in t / Double(sequence) * 1e9 }
        print(String(format: "single: ns/record generate %.1f, publish %.1f, read %.1f, check %.1f; bad %d",
                     per(generate), per(publish), per(read), per(check), bad))
    }

    /// CaptureWriter throughput and allocations per packet (lives here to keep one bench file
    /// for the observability path: ring + capture).
    static func capture(_ o: Options) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("capture-bench-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try CaptureWriter(directory: dir, detail: .full, maxFileBytes: 64 << 20)
        let count = min(o.count, 200_000)
        var packet = [UInt8](repeating: 0xAB, count: 1400)
        packet[0] = 0x45
        var time: UInt64 = 1_700_000_000_000_000_000
        let allocationsBefore = allocationCount()
        let start = now()
        var last: CaptureLocation? = nil
        packet.withUnsafeBytes { bytes in
            for _ in 0..<count {
                time &+= 1000
                last = writer.write(packet: bytes, timestampNanoseconds: time)
            }
        }
        let elapsed = now() - start
        let allocations = allocationCount() - allocationsBefore
        writer.close()
        print(String(format: "capture: %llu packets of 1400 B in %.3f s = %.2f M packets/s, %.0f MB/s, allocations in loop %llu",
                     count, elapsed, Double(count) / elapsed / 1e6, Double(count) * 1416 / elapsed / 1e6, allocations)
              + " (files written: \(last?.fileSequence ?? 0); allocations come from opening each file)")
    }

    static func stress(_ o: Options) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ring-stress-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).path
        let common = ["--count", "\(o.count)"]
        let consumer = Process()
        consumer.executableURL = URL(fileURLWithPath: exe)
        consumer.arguments = ["ring", "consume", "--path", "\(dir)/\(RingProducer.defaultFileName)"] + common
        let producer = Process()
        producer.executableURL = URL(fileURLWithPath: exe)
        producer.arguments = ["ring", "produce", "--dir", dir, "--slots", "\(o.slots)", "--batch", "\(o.batch)"]
            + common + (o.lossless ? ["--lossless"] : [])
        print("stress: \(o.count) records, \(o.slots) slots, batch \(o.batch)\(o.lossless ? ", lossless" : ", dropping when full")")
        try producer.run()
        try consumer.run()
        producer.waitUntilExit()
        consumer.waitUntilExit()
        guard producer.terminationStatus == 0, consumer.terminationStatus == 0 else {
            print("stress: FAILED (producer exit \(producer.terminationStatus), consumer exit \(consumer.terminationStatus))")
            exit(1)
        }
        print("stress: ok")
    }
}
