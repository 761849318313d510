// `tunnelbench packet`: packet parse + flow-table lookup throughput on a realistic mix.
import Core
import Foundation
import Packet
import Runtime

/// Packet parse + FlowTable.track packets/s, single thread, with the allocation count of the
/// measured loop. Options: `--flows N` (10000), `--capacity N` (65536), `--packets N` (65536
/// distinct packets in the pool), `--rounds N` (300 passes over the pool), `--burst N` (mean
/// packets of one flow in a row, 4; 1 makes every packet hit a random flow — the cache-hostile
/// worst case).
///
/// Rates are given per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID, i.e. per
/// core, unaffected by other processes on a shared machine) and per second of wall time.
func packetBench(_ args: [String]) throws {
    func option(_ name: String, _ fallback: Int) -> Int {
        guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
        return v
    }
    let flows = option("--flows", 10_000)
    let capacity = option("--capacity", 65_536)
    let packets = option("--packets", 65_536)
    let rounds = option("--rounds", 300)
    let burst = max(1, option("--burst", 4))
    let slotSize = 128

    // The pool: 45% IPv4 TCP, 25% IPv4 UDP, 20% IPv6 TCP, 10% IPv6 UDP, both directions, 0-40
    // bytes of payload, one packet per 128-byte slot.
    let pool = UnsafeMutableRawBufferPointer.allocate(byteCount: packets * slotSize, alignment: 16)
    defer { pool.deallocate() }
    pool.initializeMemory(as: UInt8.self, repeating: 0)
    let lengths = UnsafeMutablePointer<Int>.allocate(capacity: packets)
    defer { lengths.deallocate() }
    var rng = BenchRandom(seed: 42)
    // Flows are drawn from shuffled decks of all `flows` ids, so every flow is in the pool.
    var deck = Array(0..<flows)
    var dealt = flows
    var flow = 0
    var left = 0
    for i in 0..<packets {
        if left == 0 {
            if dealt == flows {
                for j in stride(from: flows - 1, to: 0, by: -1) { deck.swapAt(j, Int(rng.next() % UInt64(j + 1))) }
                dealt = 0
            }
            flow = deck[dealt]
            dealt += 1
            left = 1 + Int(rng.next() % UInt64(2 * burst - 1))  // 1 ... 2·burst-1, mean `burst`
        }
        left -= 1
        let kind = flow % 20  // 0-8 v4 tcp, 9-13 v4 udp, 14-17 v6 tcp, 18-19 v6 udp
        let v6 = kind >= 14
        let tcp = kind < 9 || (kind >= 14 && kind < 18)
        let reply = rng.next() % 3 == 0
        let payload = Int(rng.next() % 41)
        let p = UnsafeMutableRawBufferPointer(rebasing: pool[(i * slotSize)..<((i + 1) * slotSize)])
        lengths[i] = writeBenchPacket(p, flow: flow, v6: v6, tcp: tcp, reply: reply, payload: payload)
    }

    let table = FlowTable(capacity: capacity, hashSeed: rng.next())
    var sink = 0
    var errors = 0
    func pass(now: Int64, track: Bool) {
        for i in 0..<packets {
            let bytes = UnsafeRawBufferPointer(start: pool.baseAddress! + i * slotSize, count: lengths[i])
            do {
                let parsed = try PacketParser.parse(bytes)
                if track {
                    let (key, reversed) = parsed.flowKey
                    let r = table.track(key, reversed: reversed, length: parsed.totalLength, tcpFlags: parsed.tcpFlags, now: now)
                    sink &+= Int(r.handle.index)
                } else {
                    sink &+= Int(parsed.sourcePort) &+ parsed.payloadOffset
                }
            } catch {
                errors += 1
            }
        }
    }
    pass(now: 0, track: true)  // warm up: opens the flows

    for (label, track) in [("parse only", false), ("parse + flow lookup", true)] {
        let allocBefore = allocationCount()
        let wallStart = benchWallClock()
        let cpuStart = benchCPUClock()
        for round in 0..<rounds { pass(now: Int64(1 + round), track: track) }
        let cpu = Double(benchCPUClock() - cpuStart)
        let wall = Double(benchWallClock() - wallStart)
        let allocs = allocationCount() - allocBefore
        let total = Double(rounds * packets)
        print(String(format: "packet: %@ (burst %d): %.1f M packets/s per core (%.1f ns CPU/packet; wall %.1f M/s), %d packets, allocations in loop: %llu",
                     label, burst, total / cpu * 1e3, cpu / total, total / wall * 1e3, rounds * packets, allocs))
    }
    print("packet: \(flows) flows, table capacity \(capacity), \(table.count) live, evicted \(table.stats.evicted), parse errors \(errors) (sink \(sink & 1))")
}

/// Monotonic nanoseconds.
func benchWallClock() -> Int64 { Int64(SystemClock().monotonicNanoseconds()) }

/// CPU nanoseconds of the calling thread.
func benchCPUClock() -> Int64 { Int64(SystemClock.threadCPUNanoseconds()) }

/// Writes one IPv4/IPv6 TCP/UDP packet of flow `flow` (its original or reply direction) and
/// returns its length. Checksums are left zero: the parser does not verify them.
func writeBenchPacket(_ p: UnsafeMutableRawBufferPointer, flow: Int, v6: Bool, tcp: Bool, reply: Bool, payload: Int) -> Int {
    let client = UInt32(0x0A63_0000) | UInt32(flow & 0xFFFF)
    let server = UInt32(0xC633_6400) | UInt32(flow % 200)
    let clientPort = UInt16(32768 + flow % 28000)
    let serverPort: UInt16 = tcp ? (flow % 3 == 0 ? 80 : 443) : (flow % 2 == 0 ? 53 : 443)
    let (sPort, dPort) = reply ? (serverPort, clientPort) : (clientPort, serverPort)
    let l4 = tcp ? 20 : 8
    let ipLength = v6 ? 40 : 20
    let total = ipLength + l4 + payload
    func be16(_ v: UInt16, _ at: Int) { p.storeBytes(of: v.bigEndian, toByteOffset: at, as: UInt16.self) }
    func be32(_ v: UInt32, _ at: Int) { p.storeBytes(of: v.bigEndian, toByteOffset: at, as: UInt32.self) }
    if v6 {
        be32(0x6000_0000, 0)
        be16(UInt16(l4 + payload), 4)
        p[6] = tcp ? 6 : 17
        p[7] = 64
        let (src, dst) = reply ? (server, client) : (client, server)
        be32(reply ? 0x2001_0DB8 : 0xFD99_0000, 8)
        be32(src, 20)
        be32(reply ? 0xFD99_0000 : 0x2001_0DB8, 24)
        be32(dst, 36)
    } else {
        p[0] = 0x45
        be16(UInt16(total), 2)
        p[8] = 64
        p[9] = tcp ? 6 : 17
        be32(reply ? server : client, 12)
        be32(reply ? client : server, 16)
    }
    be16(sPort, ipLength)
    be16(dPort, ipLength + 2)
    if tcp {
        be32(UInt32(flow) * 7919, ipLength + 4)
        be32(UInt32(flow) * 104_729, ipLength + 8)
        p[ipLength + 12] = 5 << 4
        p[ipLength + 13] = 0x18  // ACK|PSH
    } else {
        be16(UInt16(8 + payload), ipLength + 4)
    }
    return total
}

/// SplitMix64, for a reproducible packet pool.
struct BenchRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
