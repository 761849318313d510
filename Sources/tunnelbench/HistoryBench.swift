import Core
import Foundation
import Daemon
import Engine
import Packet
import Policy
import Runtime
import Store
import WireGuard

/// `tunnelbench history [--flows N]`: flow records through the daemon's path — `History` hooks
/// (called by the engine under the flow lock) → `StoreWriter` queue → SQLite. Each flow is opened
/// (`flowDecided`), updated by one periodic sweep (`timerTick`) and closed (`flowEnded`): three
/// records. Reports the hook cost on the calling (data-path) thread, its heap allocations, and
/// the writer's records/s (wall and per writer CPU-second). The bar: ≥ 100,000 records/s.
enum HistoryBench {
    static func run(_ args: [String]) throws {
        var flows = 200_000
        if args.count == 2, args[0] == "--flows", let n = Int(args[1]), n > 0 { flows = n }
        let dir = try StoreBench.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try StoreWriter(path: dir + "/state.db", options: .init(capacity: 1 << 20))
        let clock = SystemClock()
        let peers = PeerRegistry([GatewayPeer(
            handle: PeerHandle(rawValue: 1), name: "alice", publicKey: PublicKey([UInt8](repeating: 9, count: 32))!, tier: .free)])
        let h = History(writer: writer, clock: clock, idBase: 0, peers: peers, flowUpdateIntervalMs: 1)
        let set = PolicyParser.parse([PolicySource(name: "b.rules", text: "default allow\nblock proto tcp port 22\n")])
        let policy = ActivePolicy.standalone(set, peers: [(handle: 1, name: "alice", tier: .free)])
        let verdict = PolicyVerdict(action: .allow, ruleIndex: -1, direction: .out)
        let table = FlowTable(capacity: 1 << 16)
        let src = IPAddress(v4: 0x0A63_0002), dst = IPAddress(v4: 0xCB00_7107)
        // 0. Heap allocations of the hook alone: the writer is held off by another connection's
        //    write lock (the allocation counter is process-wide; SQLite would count otherwise).
        do {
            let holder = try StateStore(path: dir + "/state.db")
            try holder.connection.execute("BEGIN IMMEDIATE")
            writer.submit(.heartbeat(at: 1))
            Sys.sleep(milliseconds: 50)
            let k = FlowKey.oriented(proto: .tcp, source: src, sourcePort: 1, destination: dst, destinationPort: 443)
            let t = table.track(k.key, reversed: k.reversed, length: 100, now: 0)
            let entry = table[t.handle]
            h.flowDecided(FlowDecision(entry: entry, peer: 1, verdict: verdict, policy: policy, opened: true, host: nil))
            let a0 = allocationCount()
            for _ in 0..<10_000 { h.flowDecided(FlowDecision(entry: entry, peer: 1, verdict: verdict, policy: policy, opened: true, host: nil)) }
            let a = allocationCount() - a0
            let blocked = PolicyVerdict(action: .block, ruleIndex: 0, direction: .out)
            let b0 = allocationCount()
            for _ in 0..<10_000 { h.flowDecided(FlowDecision(entry: entry, peer: 1, verdict: blocked, policy: policy, opened: true, host: nil)) }
            let b = allocationCount() - b0
            try holder.connection.execute("ROLLBACK")
            writer.flush()
            _ = table.remove(t.handle)
            print("history: heap allocations of the flowDecided hook: \(a) per 10000 allowed flows, \(b) per 10000 blocked flows (flow row + refusal)")
        }
        var hookNs: UInt64 = 0
        let t0 = StoreBench.seconds()
        var done = 0
        var mono: Int64 = 1
        while done < flows {
            // Fill the table with a chunk of flows, sweep once, then end them all.
            let chunk = min(table.capacity, flows - done)
            for i in 0..<chunk {
                let port = UInt16(truncatingIfNeeded: 1024 + i % 60000)
                let k = FlowKey.oriented(proto: .tcp, source: src, sourcePort: port, destination: IPAddress(v4: dst.v4 &+ UInt32(i / 60000)), destinationPort: 443)
                let t = table.track(k.key, reversed: k.reversed, length: 100, now: mono)
                let c0 = SystemClock().monotonicNanoseconds()
                h.flowDecided(FlowDecision(entry: table[t.handle], peer: 1, verdict: verdict, policy: policy, opened: t.opened, host: nil))
                hookNs += SystemClock().monotonicNanoseconds() - c0
            }
            mono += 10
            h.timerTick(flows: table, monoMs: mono)
            var ended: [FlowRecord] = []
            ended.reserveCapacity(chunk)
            _ = table.expire(now: mono + 10_000_000, budget: chunk) { ended.append($0) }
            for r in ended { h.flowEnded(r) }
            done += chunk
        }
        writer.flush()
        let wall = StoreBench.seconds() - t0
        writer.close()
        let s = writer.stats()
        let records = Double(s.recordsWritten)
        print(String(format: "history: %d flows -> %.0f records (open, sweep update, close) in %.2f s = %.0f records/s wall, %.0f per writer CPU-second (bar >= 100000/s); dropped %llu, failed batches %llu",
                     flows, records, wall, records / wall, records / (Double(s.cpuNs) / 1e9), writer.droppedCount, s.failedBatches))
        print(String(format: "history: flowDecided hook on the data-path thread: %.0f ns per new flow (while the writer runs)",
                     Double(hookNs) / Double(flows)))
    }
}
