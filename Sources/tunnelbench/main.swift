// tunnelbench: benchmarks, not tests. `swift run -c release tunnelbench GROUP`.
// Each group lives in its own file (`PolicyBench.swift`, …) and registers one line below.
import Core
import Foundation

let groups: [(name: String, summary: String, run: ([String]) throws -> Void)] = [
    ("alloc", "check that the allocation counter sees allocations", { _ in
        let before = allocationCount()
        var arrays: [[Int]] = []
        for i in 0..<100 { arrays.append([i, i + 1]) }
        print("alloc: 100 arrays -> \(allocationCount() - before) allocations counted (\(arrays.count))")
    }),
    ("ring", "live ring across two processes: produce | consume | stress", { try RingBench.run($0) }),
    // Benchmark groups register here, one line each.
    ("packet", "packet parse + flow-table lookup packets/s", packetBench),
    (PolicyBench.name, PolicyBench.summary, PolicyBench.run),
    ("wireguard", "WireGuard handshakes/s, transport GB/s vs raw libsodium, allocations", wireguardBench),
    ("udp", "loopback UDP datagrams/s: batched LinuxDatagramBind (recvmmsg) vs one recvfrom per datagram", UDPBench.run),
    ("store", "StoreWriter write rate; prune of 1M flow rows under a concurrent writer", StoreBench.run),
    ("history", "flow records/s through the daemon's History hooks -> StoreWriter; hook cost per flow", HistoryBench.run),
    ("observe", "daemon observer cost per packet: none, idle, watching, capture full", ObserveBench.run),
    (OffloadBench.name, OffloadBench.summary, OffloadBench.run),
    (HostsBench.name, HostsBench.summary, HostsBench.run),
    (HandshakeFloodBench.name, HandshakeFloodBench.summary, HandshakeFloodBench.run),
    (WGLoadBench.name, WGLoadBench.summary, WGLoadBench.run),
    (SinkBench.name, SinkBench.summary, SinkBench.run),
    (BlastBench.name, BlastBench.summary, BlastBench.run),
    (SharedStoreBench.name, SharedStoreBench.summary, SharedStoreBench.run),
]

let argv = Array(CommandLine.arguments.dropFirst())
guard let name = argv.first, let group = groups.first(where: { $0.name == name }) else {
    print("usage: tunnelbench GROUP [options]\n\ngroups:")
    for g in groups { print("  \(g.name.padding(toLength: 12, withPad: " ", startingAt: 0))\(g.summary)") }
    exit(argv.isEmpty ? 0 : 2)
}
try group.run(Array(argv.dropFirst()))
