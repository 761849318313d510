// `tunnelbench offload`: TUN offload throughput — TUNCoalescer (GRO for TUN writes) and
// GSOSegmenter (splitting TSO/USO reads), with the allocation count of each measured loop.
import Core
import Foundation
import Packet

/// Batches of full-sized TCP segments from a few interleaved flows (what the inbound path hands
/// the TUN writer), coalesced and split back. Options: `--flows N` (4), `--batch N` (64 packets
/// per coalesce call), `--mss N` (1368 payload bytes: a 1420-byte tunnel MTU), `--v6`, `--udp`,
/// `--rounds N` (20000).
///
/// Phases: `coalesce` (plan groups + rewrite first packets; the first packets' headers are
/// restored between rounds), `segment` (plan + segment every super-packet the coalescer made,
/// as a TSO read would be split), `round trip` (coalesce, gather each group as the writev
/// would, segment). Rates per second of this thread's CPU time; GB/s counts IP bytes out.
enum OffloadBench {
    static let name = "offload"
    static let summary = "TUNCoalescer + GSOSegmenter packets/s, GB/s, allocations in the loop"

    static func run(_ args: [String]) throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
            return v
        }
        let flows = max(1, option("--flows", 4))
        let batch = max(1, option("--batch", 64))
        let mss = max(1, option("--mss", 1368))
        let rounds = max(1, option("--rounds", 20_000))
        let v6 = args.contains("--v6")
        let udp = args.contains("--udp")
        let ip = v6 ? 40 : 20
        let header = ip + (udp ? 8 : 20)
        let slot = header + mss

        // The pristine batch: flows round-robin, consecutive IDs and sequence numbers per flow.
        let pristine = UnsafeMutableRawBufferPointer.allocate(byteCount: batch * slot, alignment: 16)
        let work = UnsafeMutableRawBufferPointer.allocate(byteCount: batch * slot, alignment: 16)
        let packets = UnsafeMutablePointer<UnsafeMutableRawBufferPointer>.allocate(capacity: batch)
        defer { pristine.deallocate(); work.deallocate(); packets.deallocate() }
        pristine.initializeMemory(as: UInt8.self, repeating: 0)
        for i in 0..<batch {
            let p = UnsafeMutableRawBufferPointer(rebasing: pristine[(i * slot)..<((i + 1) * slot)])
            writeOffloadBenchPacket(p, flow: i % flows, index: i / flows, v6: v6, udp: udp, mss: mss)
            packets[i] = UnsafeMutableRawBufferPointer(rebasing: work[(i * slot)..<((i + 1) * slot)])
        }
        work.copyMemory(from: UnsafeRawBufferPointer(pristine))

        let coalescer = TUNCoalescer(capacity: batch)
        let wire = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536 + VirtioNetHeader.size, alignment: 16)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { wire.deallocate(); out.deallocate() }
        var sink = 0
        var failures = 0

        func restoreFirsts(_ groups: Int) {
            for g in 0..<groups {
                let first = Int(coalescer.members(ofGroup: g)[0])
                (work.baseAddress! + first * slot).copyMemory(from: pristine.baseAddress! + first * slot, byteCount: header)
            }
        }
        /// Gathers group `g` as the TUN writev would; returns the wire length.
        func gather(_ g: Int) -> Int {
            coalescer.header(ofGroup: g).write(to: wire.baseAddress!)
            var n = VirtioNetHeader.size
            let skip = coalescer.skip(ofGroup: g)
            for (k, m) in coalescer.members(ofGroup: g).enumerated() {
                let p = packets[Int(m)]
                let from = k == 0 ? 0 : skip
                (wire.baseAddress! + n).copyMemory(from: p.baseAddress! + from, byteCount: p.count - from)
                n += p.count - from
            }
            return n
        }
        /// Splits the wire bytes; returns IP bytes produced.
        func split(_ n: Int) -> Int {
            let bytes = UnsafeRawBufferPointer(wire)
            do throws(OffloadError) {
                let h = try VirtioNetHeader(bytes)
                let packet = UnsafeRawBufferPointer(rebasing: bytes[VirtioNetHeader.size..<n])
                let s = try GSOSegmenter.plan(h, packet: packet)
                var total = 0
                for i in 0..<s.count { total += GSOSegmenter.segment(i, of: s, packet: packet, into: out) }
                return total
            } catch {
                failures += 1
                return 0
            }
        }
        func measure(_ label: String, packetsPerRound: Int, _ body: () -> Int) {
            _ = body()  // warm up
            let allocBefore = allocationCount()
            let cpuStart = benchCPUClock()
            var bytes = 0
            for _ in 0..<rounds { bytes &+= body() }
            let cpu = Double(benchCPUClock() - cpuStart)
            let allocs = allocationCount() - allocBefore
            let total = Double(rounds * packetsPerRound)
            print(String(format: "offload: %@: %.2f M packets/s per core (%.1f ns/packet), %.2f GB/s, allocations in loop: %llu",
                         label, total / cpu * 1e3, cpu / total, Double(bytes) / cpu, allocs))
        }

        // Coalesce only.
        var groups = coalescer.coalesce(packets, count: batch, allowUDP: udp)
        measure("coalesce", packetsPerRound: batch) {
            restoreFirsts(groups)
            groups = coalescer.coalesce(packets, count: batch, allowUDP: udp)
            sink &+= groups
            return batch * slot
        }
        let largest = (0..<groups).map { coalescer.members(ofGroup: $0).count }.max() ?? 0
        print("offload: \(batch) packets of \(flows) flows -> \(groups) groups (largest \(largest) members), \(v6 ? "IPv6" : "IPv4") \(udp ? "UDP" : "TCP"), mss \(mss)")

        // Segment only: the first group's super-packet, split over and over.
        let n0 = gather(0)
        let segs0 = coalescer.members(ofGroup: 0).count
        measure("segment (\(segs0) segments of \(n0 - VirtioNetHeader.size) bytes)", packetsPerRound: segs0) { split(n0) }

        // Round trip: coalesce, gather, segment.
        measure("round trip", packetsPerRound: batch) {
            restoreFirsts(groups)
            groups = coalescer.coalesce(packets, count: batch, allowUDP: udp)
            var bytes = 0
            for g in 0..<groups { bytes += split(gather(g)) }
            return bytes
        }
        print("offload: split failures \(failures) (sink \(sink & 1))")
    }
}

/// One valid (checksummed) TCP or UDP packet: packet `index` of flow `flow`, `mss` payload bytes.
private func writeOffloadBenchPacket(_ p: UnsafeMutableRawBufferPointer, flow: Int, index: Int, v6: Bool, udp: Bool, mss: Int) {
    func be16(_ v: UInt16, _ at: Int) { p.storeBytes(of: v.bigEndian, toByteOffset: at, as: UInt16.self) }
    func be32(_ v: UInt32, _ at: Int) { p.storeBytes(of: v.bigEndian, toByteOffset: at, as: UInt32.self) }
    let ip = v6 ? 40 : 20
    let l4 = udp ? 8 : 20
    let total = ip + l4 + mss
    var c = InternetChecksum()
    if v6 {
        be32(0x6000_0000, 0)
        be16(UInt16(l4 + mss), 4)
        p[6] = udp ? 17 : 6
        p[7] = 64
        be32(0xFD99_0000, 8); be32(UInt32(flow + 1), 20)
        be32(0x2001_0DB8, 24); be32(7, 36)
        c.add(UnsafeRawBufferPointer(rebasing: p[8..<40]))
    } else {
        p[0] = 0x45
        be16(UInt16(total), 2)
        be16(UInt16(truncatingIfNeeded: 1000 + index), 4)
        p[6] = 0x40
        p[8] = 64
        p[9] = udp ? 17 : 6
        be32(0x0A63_0000 | UInt32(flow + 1), 12)
        be32(0xC633_6407, 16)
        be16(InternetChecksum.checksum(UnsafeRawBufferPointer(rebasing: p[0..<20])), 10)
        c.add(UnsafeRawBufferPointer(rebasing: p[12..<20]))
    }
    be16(UInt16(40000 + flow), ip)
    be16(443, ip + 2)
    for i in (ip + l4)..<total { p[i] = UInt8(truncatingIfNeeded: i &* 7 &+ index) }
    if udp {
        be16(UInt16(l4 + mss), ip + 4)
    } else {
        be32(UInt32(truncatingIfNeeded: 1_000_000 + index * mss), ip + 4)
        be32(77, ip + 8)
        p[ip + 12] = 0x50
        p[ip + 13] = 0x10
        be16(501, ip + 14)
    }
    c.add(UInt16(udp ? 17 : 6))
    c.add(UInt32(l4 + mss))
    c.add(UnsafeRawBufferPointer(rebasing: p[ip..<total]))
    var sum = c.finalized
    if udp && sum == 0 { sum = 0xFFFF }
    be16(sum, ip + (udp ? 6 : 16))
}
