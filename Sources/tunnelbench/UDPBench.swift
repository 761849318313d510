// tunnelbench udp: loopback UDP datagrams per second received through Gateway's batched
// LinuxDatagramBind (recvmmsg, 64 per call) versus a naive one-recvfrom-per-datagram loop.
// 1. concurrent: one sender thread (sendmmsg batches of 64, as fast as the socket takes them) and
//    one receiver thread; 64-byte payloads over 127.0.0.1; same socket buffers in both modes. On a
//    loaded 2-core machine the sender can be the limit, so also:
// 2. drain: fill the receiver's socket buffer with 8192 datagrams while nobody reads, then time
//    how fast the receiver empties it — the cost of the receive path alone.
import Core
import Foundation
import SystemIO
import Packet
import Runtime
import Synchronization

enum UDPBench {
    enum Mode: String { case batched, naive }

    final class Shared: Sendable {
        let stop = Atomic<Bool>(false)
        let received = Atomic<Int>(0)
        let sent = Atomic<Int>(0)
    }

    static func run(_ arguments: [String]) throws {
        let seconds = arguments.first.flatMap(Double.init) ?? 2
        let rounds = 3
        print("udp: 64-byte datagrams over 127.0.0.1, 1 sender thread (sendmmsg x64), 1 receiver thread, \(seconds) s x \(rounds) rounds, median")
        var medians: [Mode: Double] = [:]
        for mode in [Mode.batched, .naive] {
            var results: [(rate: Double, detail: String)] = []
            for _ in 0..<rounds { results.append(try measure(mode, seconds: seconds)) }
            results.sort { $0.rate < $1.rate }
            let median = results[rounds / 2]
            medians[mode] = median.rate
            let all = results.map { String(Int($0.rate)) }.joined(separator: ", ")
            print("  concurrent \(mode.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(Int(median.rate)) datagrams/s received  (rounds \(all); median round: \(median.detail))")
        }
        print(String(format: "  concurrent ratio batched / naive: %.2fx", medians[.batched]! / medians[.naive]!))
        var drains: [Mode: Double] = [:]
        for mode in [Mode.batched, .naive] {
            let r = try drain(mode, cycles: 40)
            drains[mode] = r.rate
            print("  drain      \(mode.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(Int(r.rate)) datagrams/s received  (\(r.detail))")
        }
        print(String(format: "  drain ratio batched / naive: %.2fx", drains[.batched]! / drains[.naive]!))
    }

    /// Receives everything queued on `receiver` right now; returns how many.
    static func receiveAll(_ mode: Mode, _ receiver: LinuxDatagramBind, _ batch: PacketBatch, _ buffer: UnsafeMutableRawPointer) -> Int {
        var total = 0
        switch mode {
        case .batched:
            while true {
                let n = (try? receiver.receive(into: batch)) ?? 0
                if n == 0 { return total }
                total += n
            }
        case .naive:
            var from = sockaddr_storage()
            while true {
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let n = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(receiver.ipv4Descriptor, buffer, 2048, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
                if n < 0 { return total }
                total += 1
            }
        }
    }

    static func drain(_ mode: Mode, cycles: Int) throws -> (rate: Double, detail: String) {
        let loopback = IPAddress(v4: 0x7F00_0001)
        let receiver = try LinuxDatagramBind(port: 0, bufferBytes: 32 << 20, ipv4: loopback, ipv6: nil)
        let sender = try LinuxDatagramBind(port: 0, bufferBytes: 32 << 20, ipv4: loopback, ipv6: nil)
        let out = PacketBatch(capacity: 64, slotSize: 2048)
        let payload = [UInt8](repeating: 0x5A, count: 64)
        for i in 0..<64 { out.set(i, bytes: payload, endpoint: Endpoint(address: loopback, port: receiver.port)) }
        out.count = 64
        let batch = PacketBatch(capacity: 64, slotSize: 2048)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var received = 0
        var nanos: UInt64 = 0
        var allocations: UInt64 = 0
        for _ in 0..<cycles {
            var queued = 0
            while queued < 8192 { queued += (try? sender.send(out)) ?? 0 }
            let a0 = allocationCount()
            let t0 = SystemClock().monotonicNanoseconds()
            received += receiveAll(mode, receiver, batch, buffer)
            nanos += SystemClock().monotonicNanoseconds() - t0
            allocations += allocationCount() - a0
        }
        let expected = cycles * 8192
        return (
            Double(received) / (Double(nanos) / 1e9),
            "\(received)/\(expected) queued datagrams drained, \(allocations) allocations while draining"
        )
    }

    static func measure(_ mode: Mode, seconds: Double) throws -> (rate: Double, detail: String) {
        let loopback = IPAddress(v4: 0x7F00_0001)
        let receiver = try LinuxDatagramBind(port: 0, bufferBytes: 8 << 20, ipv4: loopback, ipv6: nil)
        let sender = try LinuxDatagramBind(port: 0, bufferBytes: 8 << 20, ipv4: loopback, ipv6: nil)
        let target = Endpoint(address: loopback, port: receiver.port)
        let shared = Shared()

        let sending = WorkerThread(name: "bench-send") {
            let batch = PacketBatch(capacity: 64, slotSize: 2048)
            let payload = [UInt8](repeating: 0x5A, count: 64)
            for i in 0..<64 { batch.set(i, bytes: payload, endpoint: target) }
            batch.count = 64
            while !shared.stop.load(ordering: .relaxed) {
                let n = (try? sender.send(batch)) ?? 0
                shared.sent.add(n, ordering: .relaxed)
                if n < 64 { sched_yield() }
            }
        }
        let receiving = WorkerThread(name: "bench-receive") {
            switch mode {
            case .batched:
                let batch = PacketBatch(capacity: 64, slotSize: 2048)
                while !shared.stop.load(ordering: .relaxed) {
                    let n = (try? receiver.receive(into: batch)) ?? 0
                    if n == 0 { _ = try? receiver.waitReadable(timeoutMilliseconds: 10); continue }
                    shared.received.add(n, ordering: .relaxed)
                }
            case .naive:
                let fd = receiver.ipv4Descriptor
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 16)
                var from = sockaddr_storage()
                while !shared.stop.load(ordering: .relaxed) {
                    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let n = withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, buffer, 2048, Int32(MSG_DONTWAIT), $0, &length) }
                    }
                    if n < 0 {
                        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                        _ = poll(&p, 1, 10)
                        continue
                    }
                    shared.received.add(1, ordering: .relaxed)
                }
                buffer.deallocate()
            }
        }

        Sys.sleep(milliseconds: 300)  // warm up
        let r0 = shared.received.load(ordering: .relaxed)
        let s0 = shared.sent.load(ordering: .relaxed)
        let a0 = allocationCount()
        let t0 = SystemClock().monotonicNanoseconds()
        Sys.sleep(nanoseconds: UInt64(seconds * 1e9))
        let r1 = shared.received.load(ordering: .relaxed)
        let s1 = shared.sent.load(ordering: .relaxed)
        let a1 = allocationCount()
        let t1 = SystemClock().monotonicNanoseconds()
        shared.stop.store(true, ordering: .relaxed)
        sending.join()
        receiving.join()
        let elapsed = Double(t1 - t0) / 1e9
        let received = r1 - r0
        let sent = s1 - s0
        let lost = sent > 0 ? 100 * Double(sent - min(sent, received)) / Double(sent) : 0
        let detail = "sent \(Int(Double(sent) / elapsed))/s, lost \(String(format: "%.1f", lost))%, \(receiver.buffers), \(a1 - a0) allocations in the window"
        return (Double(received) / elapsed, detail)
    }
}
