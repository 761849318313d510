// `tunnelbench observe`: what the daemon's PacketObserver costs the data path per packet, in the
// four states it can be in, over the same decide-like loop (parse, track, observer call):
// no observer at all; observer with nobody watching and capture off; a watcher attached (a
// consumer thread draining the ring); capture at full detail (1400-byte packets to a temp dir).
import Core
import Capture
import Foundation
import Daemon
import Engine
import LiveFeed
import Packet
import Policy
import Runtime

enum ObserveBench {
    static func run(_ args: [String]) throws {
        var count = 2_000_000
        if let i = args.firstIndex(of: "--count"), i + 1 < args.count { count = Int(args[i + 1]) ?? count }
        let dir = NSTemporaryDirectory() + "tv-observe-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }

        // 64 UDP flows of 1400-byte packets, alternating directions.
        let packets: [[UInt8]] = (0..<128).map { i in
            let flow = UInt16(i / 2)
            let out = i % 2 == 0
            return udp(src: out ? 0x0A63_0002 : 0xC613_0002, sport: out ? 40_000 + flow : 53,
                       dst: out ? 0xC613_0002 : 0x0A63_0002, dport: out ? 53 : 40_000 + flow, payload: 1372)
        }
        print("observe: \(count) packets of 1400 bytes over 64 flows, batches of 64; ns per packet of parse + track + observer")
        for mode in ["none", "idle", "watching", "capture-full", "watching+capture"] {
            let ring = mode == "none" ? nil : try RingProducer(directory: dir, slotCount: 65_536)
            let capture = mode.contains("capture") ? try CaptureSpooler(directory: dir + "/capture", detail: .full) : nil
            let observer = mode == "none" ? nil : PacketObserver(ring: ring, capture: capture, flowCapacity: 4096, peers: PeerRegistry())
            var consumer: RingConsumer? = nil
            let stop = StopSignal()
            var drainer: WorkerThread? = nil
            if mode.contains("watching"), let ring {
                let c = try RingConsumer(path: ring.path)
                consumer = c
                let box = ConsumerBox(c)
                drainer = WorkerThread(name: "bench-drainer", stopSignal: stop) {
                    var buffer = [LiveRecord](repeating: LiveRecord(), count: 1024)
                    while !stop.isStopped {
                        _ = box.consumer.wait(timeoutNanoseconds: 50_000_000)
                        _ = buffer.withUnsafeMutableBufferPointer { box.consumer.read(into: $0) }
                    }
                }
            }
            let table = FlowTable(capacity: 4096)
            let start = now()
            let cpu0 = cpuSeconds()
            let allocations0 = allocationCount()
            var i = 0
            var sink: UInt64 = 0
            while i < count {
                observer?.beginBatch()
                for j in 0..<64 {
                    let p = packets[(i + j) & 127]
                    p.withUnsafeBytes { raw in
                        guard let parsed = try? PacketParser.parse(raw) else { return }
                        let (key, reversed) = parsed.flowKey
                        let t = table.track(key, reversed: reversed, length: raw.count, tcpFlags: parsed.tcpFlags, now: 1000)
                        // As in GatewayEngine.decide: the entry is read for the cached verdict anyway.
                        let entry = table[t.handle]
                        sink &+= UInt64(entry.verdictAction)
                        observer?.packet(ObservedBytes(raw), parsed, handle: t.handle, entry: entry,
                                         opened: t.opened, action: .allow, peer: 1, fromPeer: j % 2 == 0)
                    }
                }
                observer?.endBatch()
                i += 64
            }
            let allocations = allocationCount() - allocations0
            if sink == UInt64.max { print(sink) }
            let cpu = cpuSeconds() - cpu0
            let wall = now() - start
            stop.stop()
            drainer?.join()
            print(String(format: "  %-17@ %6.1f ns/packet (wall), %6.1f ns/packet (process CPU), allocations in loop %llu, ring dropped %llu, captured %llu",
                         mode as NSString, wall / Double(count) * 1e9, cpu / Double(count) * 1e9, allocations,
                         ring?.dropped ?? 0, capture?.packetsWritten ?? 0))
            observer?.close()
            _ = consumer
        }
    }

    static func udp(src: UInt32, sport: UInt16, dst: UInt32, dport: UInt16, payload: Int) -> [UInt8] {
        func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func be32(_ v: UInt32) -> [UInt8] { be16(UInt16(v >> 16)) + be16(UInt16(v & 0xFFFF)) }
        let body = [UInt8](repeating: 0xAB, count: payload)
        let transport = be16(sport) + be16(dport) + be16(UInt16(8 + payload)) + [0, 0] + body
        return [0x45, 0] + be16(UInt16(20 + transport.count)) + [0, 1, 0x40, 0, 64, 17, 0, 0] + be32(src) + be32(dst) + transport
    }

    static func now() -> Double { Double(SystemClock().monotonicNanoseconds()) / 1e9 }

    static func cpuSeconds() -> Double { Double(SystemClock.processCPUNanoseconds()) / 1e9 }
}

/// Hands the consumer to the drain thread.
final class ConsumerBox: @unchecked Sendable {
    // Safe: after the hand-over only the drain thread uses the consumer.
    let consumer: RingConsumer
    init(_ c: RingConsumer) { consumer = c }
}
