import Core
import Foundation
import Store

/// `tunnelbench shared [--rows N] [--opens N] [--rounds N]`: the shared store on
/// PostgreSQL, against the connection string in `TUNNELVISION_BENCH_PG` (scripts/bench/shared-store.sh
/// starts a throw-away cluster). Each round uses a fresh schema.
///
/// - window open: `openWindow` latency p50/p99 for a peer with no window (the INSERT path) and for
///   a peer in its pause (the conflict path, then the re-read), next to a bare `SELECT 1` round trip
///   on the same connection (what libpq and the socket cost alone);
/// - history: rows/s from the local journal into PostgreSQL the way the daemon ships them (SQLite
///   `ship_queue` chunk of 5,000 → one `unnest` upsert transaction → delete the chunk), and the
///   upsert alone (chunks read beforehand). Bar: ≥ 100,000 rows/s.
enum SharedStoreBench {
    static let name = "shared"
    static let summary = "shared store on PostgreSQL: window-open latency p50/p99, history rows/s (TUNNELVISION_BENCH_PG)"

    static func run(_ args: [String]) throws {
        var rows = 200_000, opens = 2_000, rounds = 3
        var i = 0
        while i + 1 < args.count {
            guard let n = Int(args[i + 1]), n > 0 else { break }
            switch args[i] {
            case "--rows": rows = n
            case "--opens": opens = n
            case "--rounds": rounds = n
            default: break
            }
            i += 2
        }
        guard let conninfo = ProcessInfo.processInfo.environment["TUNNELVISION_BENCH_PG"], !conninfo.isEmpty else {
            print("shared: set TUNNELVISION_BENCH_PG to a libpq connection string (scripts/bench/shared-store.sh starts a cluster)")
            exit(2)
        }
        var ping: [Double] = [], fresh: [Double] = [], paused: [Double] = []
        var journalRates: [Double] = [], upsertRates: [Double] = []
        for round in 1...rounds {
            let schema = "bench_\(getpid())_\(round)"
            let admin = try PGConnection(conninfo: conninfo)
            _ = try admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE; CREATE SCHEMA \(schema)")
            defer { _ = try? admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE") }
            let scoped = conninfo + " options='-csearch_path=\(schema)'"
            let conn = try PGConnection(conninfo: scoped)
            let state = try PostgresSharedState(connection: conn)

            // Window opens.
            let now: Int64 = 1_760_000_000_000
            let dates = WindowDates(allowedUntil: now + 3_600_000, reconnectAt: now + 7_200_000)
            for _ in 0..<200 { _ = try conn.execute("SELECT 1") }  // warm the connection
            for k in 0..<opens {
                ping.append(try time { _ = try conn.execute("SELECT 1") })
                fresh.append(try time { _ = try state.openWindow(peer: "peer-\(k)", dates: dates, gateway: "gw-bench", now: now) })
            }
            for k in 0..<opens {
                paused.append(try time {
                    let r = try state.openWindow(peer: "peer-\(k)", dates: dates, gateway: "gw-other", now: now + 1_000)
                    precondition(!r.opened, "a peer in its window must not get a second one")
                })
            }

            // History from a journal.
            let dir = try StoreBench.tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let local = try StateStore(path: dir + "/state.db")
            try local.setJournalTarget(gateway: "gw-bench", at: now)
            let src = IPAddress(v4: 0x0A63_0002), dst = IPAddress(v4: 0xCB00_7107)
            try local.connection.transaction {
                for id in 1...Int64(rows) {
                    try local.insertFlow(FlowOpen(id: id, proto: 6, src: src, srcPort: UInt16(truncatingIfNeeded: id), dst: dst, dstPort: 443,
                                                  peer: "alice", host: id % 3 == 0 ? "example.com" : nil, at: now + id, verdict: .allow,
                                                  rule: nil))
                }
            }
            var shipped = 0
            let t0 = DispatchTime.now().uptimeNanoseconds
            var chunks: [HistoryBatch] = []
            var tRead: UInt64 = 0, tShip: UInt64 = 0, tAck: UInt64 = 0
            while true {
                let a = DispatchTime.now().uptimeNanoseconds
                let c = try local.journalChunk(limit: 5_000)
                if c.through == 0 { break }
                let b = DispatchTime.now().uptimeNanoseconds
                try state.ship(c.batch)
                let d = DispatchTime.now().uptimeNanoseconds
                try local.journalShipped(through: c.through)
                tRead += b - a; tShip += d - b; tAck += DispatchTime.now().uptimeNanoseconds - d
                shipped += c.batch.count
                chunks.append(c.batch)
            }
            let t1 = DispatchTime.now().uptimeNanoseconds
            print(String(format: "  split: journal read %.2f s, ship %.2f s, delete shipped %.2f s", Double(tRead) / 1e9, Double(tShip) / 1e9, Double(tAck) / 1e9))
            precondition(shipped == rows, "shipped \(shipped) of \(rows)")
            let counted = try state.historyCounts(gateway: "gw-bench").flows
            precondition(counted == Int64(rows), "PostgreSQL holds \(counted) of \(rows) flow rows")
            journalRates.append(Double(rows) / (Double(t1 - t0) / 1e9))
            // Shipping alone (chunks read beforehand), as a second gateway: new keys, as the first pass.
            let t2 = DispatchTime.now().uptimeNanoseconds
            for var b in chunks {
                b.gateway = "gw-bench-2"
                try state.ship(b)
            }
            let t3 = DispatchTime.now().uptimeNanoseconds
            upsertRates.append(Double(rows) / (Double(t3 - t2) / 1e9))
            print("round \(round): journal -> PostgreSQL \(Int(journalRates.last!)) rows/s, ship alone \(Int(upsertRates.last!)) rows/s")
        }
        func ms(_ v: [Double], _ q: Double) -> String { String(format: "%.3f", percentile(v, q) * 1e3) }
        print("window open (\(opens) per round, \(rounds) round(s); ms):")
        print("  SELECT 1 round trip     p50 \(ms(ping, 0.5))  p99 \(ms(ping, 0.99))")
        print("  open, no window yet     p50 \(ms(fresh, 0.5))  p99 \(ms(fresh, 0.99))   (p50 \(String(format: "%.2f", percentile(fresh, 0.5) / percentile(ping, 0.5)))x SELECT 1)")
        print("  open, peer in its pause p50 \(ms(paused, 0.5))  p99 \(ms(paused, 0.99))   (p50 \(String(format: "%.2f", percentile(paused, 0.5) / percentile(ping, 0.5)))x SELECT 1)")
        print("  bar: p99 <= 5 ms -> \(max(percentile(fresh, 0.99), percentile(paused, 0.99)) <= 0.005 ? "met" : "NOT met")")
        func spread(_ v: [Double]) -> String {
            let s = v.sorted()
            return "median \(Int(s[s.count / 2])) rows/s (min \(Int(s.first!)), max \(Int(s.last!)))"
        }
        print("history (\(rows) flow rows per round, chunks of 5,000):")
        print("  journal -> PostgreSQL   \(spread(journalRates))")
        print("  ship alone (read before) \(spread(upsertRates))")
        print("  bar: >= 100,000 rows/s -> \(journalRates.sorted()[journalRates.count / 2] >= 100_000 ? "met" : "NOT met")")
    }

    private static func time(_ body: () throws -> Void) throws -> Double {
        let t0 = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
    }

    private static func percentile(_ v: [Double], _ q: Double) -> Double {
        let s = v.sorted()
        return s[min(s.count - 1, Int(Double(s.count - 1) * q))]
    }
}
