// `tunnelbench policy`: compiled policy evaluations per second at 10, 1,000 and 10,000 rules.
import Core
import Foundation
import Packet
import Policy
import Runtime

/// Realistic rule sets (blocklists of /24s and /32s, per-peer exceptions, port and tier rules,
/// host rules, a few time windows, private networks at the end) written as rule text and parsed,
/// and pregenerated flows, most of them to addresses no rule names (so many take the default and
/// every rule's bits are looked at: the worst case for the evaluator).
enum PolicyBench {
    static let name = "policy"
    static let summary = "policy evaluations/s at 10, 1,000 and 10,000 rules, allocations in the loop; 100,000 CIDR+port rules: compile time and RSS"

    struct Rng {
        var s: UInt64
        mutating func next() -> UInt64 {
            s &+= 0x9E37_79B9_7F4A_7C15
            var z = s
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static func ruleText(_ n: Int, _ rng: inout Rng) -> String {
        var lines = ["default allow", "default in block"]
        func v4(_ r: inout Rng) -> String { "\(1 + r.int(222)).\(r.int(256)).\(r.int(256))" }
        for i in 0..<max(0, n - 2) {
            let k = rng.int(100)
            switch k {
            case 0..<2: lines.append("block proto tcp port \([25, 23, 135, 139, 445][rng.int(5)]) name port-\(i)")
            case 2..<55: lines.append("block to \(v4(&rng)).0/24 name bl-\(i)")
            case 55..<62: lines.append("block to \(v4(&rng)).\(rng.int(256)) name bl-\(i)")
            case 62..<65: lines.append("block to 2001:db8:\(String(rng.int(65536), radix: 16))::/48 name bl6-\(i)")
            case 65..<78:
                lines.append("allow peer peer\(rng.int(200)) proto tcp to \(v4(&rng)).\(rng.int(256)) port 22, 443 name exc-\(i)")
            case 78..<86:
                let lo = 1024 + rng.int(60000)
                lines.append("reject tier free proto tcp,udp port \(lo)-\(lo + rng.int(50)) name tier-\(i)")
            case 86..<94: lines.append("block host *.ad\(rng.int(5000)).example, ad\(rng.int(5000)).example name host-\(i)")
            case 94..<96: lines.append("block tier free to \(v4(&rng)).0/24 during 22:00-07:00 mon-fri name night-\(i)")
            default: lines.append("allow peer peer\(rng.int(200)) from 10.99.0.\(rng.int(256)) to \(v4(&rng)).0/24 name src-\(i)")
            }
        }
        lines.append("block to 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7 name private")
        lines.append("block proto tcp port 25 name smtp")
        return lines.joined(separator: "\n")
    }

    static func queries(_ policy: CompiledPolicy, _ count: Int, _ rng: inout Rng) -> [PolicyQuery] {
        let hosts = (0..<64).map { $0 % 2 == 0 ? "www.ad\($0).example" : "cdn\($0).example.org" }
        return (0..<count).map { _ in
            let v6 = rng.int(10) == 0
            let proto: IPProtocol = [.tcp, .tcp, .tcp, .udp, .udp, v6 ? .icmpv6 : .icmp][rng.int(6)]
            let src = v6 ? IPAddress(v6High: 0xFD99_0000_0000_0000, low: UInt64(2 + rng.int(250))) : IPAddress(v4: 0x0A63_0000 | UInt32(2 + rng.int(250)))
            let dst = v6 ? IPAddress(v6High: 0x2001_0DB8_0000_0000 | UInt64(rng.int(65536)) << 16, low: rng.next())
                : IPAddress(v4: UInt32(truncatingIfNeeded: rng.next()))
            return PolicyQuery(
                direction: rng.int(20) == 0 ? .in : .out, proto: proto, source: src, destination: dst,
                sourcePort: UInt16(32768 + rng.int(28000)), destinationPort: [443, 80, 53, 22, 25, UInt16(1024 + rng.int(64000))][rng.int(6)],
                peer: policy.peerID(named: "peer\(rng.int(250))"), tier: rng.int(2) == 0 ? .free : .premium,
                host: rng.int(10) == 0 ? hosts[rng.int(hosts.count)] : nil, minuteOfWeek: rng.int(PolicyClock.minutesPerWeek))
        }
    }

    /// `tunnelbench policy` runs everything; `--blocklist` only the 100,000-rule blocklist (parse,
    /// compile, RSS in this process); `--write-blocklist DIR [N]` writes that blocklist (N rules,
    /// default 100,000) as `DIR/50-blocklist.rules`, for `scripts/bench/policy-memory.sh` to
    /// measure `tunnelctl policy test` on it.
    static func run(_ args: [String]) throws {
        if args.first == "--write-blocklist" {
            guard args.count >= 2 else { throw PolicyLoadError(message: "usage: tunnelbench policy --write-blocklist DIR [N]") }
            let n = args.count > 2 ? Int(args[2]) ?? 100_000 : 100_000
            try FileManager.default.createDirectory(atPath: args[1], withIntermediateDirectories: true)
            try blocklistText(n).write(toFile: args[1] + "/50-blocklist.rules", atomically: true, encoding: .utf8)
            return
        }
        if args.first == "--blocklist" { return try blocklist(100_000) }
        var results: [(rules: Int, nsPerEval: Double)] = []
        for n in [10, 1_000, 10_000] {
            var rng = Rng(s: UInt64(n))
            let text = ruleText(n, &rng)
            let t0 = ContinuousClock.now
            let set = PolicyParser.parse(text, file: "bench.rules")
            guard !set.hasErrors else { throw PolicyLoadError(message: "bench rules do not parse: \(set.errors[0])") }
            let t1 = ContinuousClock.now
            let policy = CompiledPolicy(set)
            let t2 = ContinuousClock.now
            let qs = queries(policy, 1 << 16, &rng)
            var decided = 0
            for q in qs where !policy.evaluate(q).isDefault { decided += 1 }
            // The best of 5 passes of 2M evaluations each, timed in this thread's CPU time (the
            // machine is shared: wall time would count other processes' turns on the core).
            var sink: Int32 = 0
            var best = Double.infinity
            var allocs: UInt64 = 0
            let passes = 5, perPass = 2_000_000
            for _ in 0..<passes {
                let a0 = allocationCount()
                let start = threadCPUNanoseconds()
                var i = 0
                while i < perPass {
                    sink &+= policy.evaluate(qs[i & (qs.count - 1)]).ruleIndex
                    i += 1
                }
                let ns = Double(threadCPUNanoseconds() - start)
                allocs += allocationCount() - a0
                best = min(best, ns / Double(perPass))
            }
            results.append((set.rules.count, best))
            func ms(_ d: Duration) -> String { String(format: "%.1f ms", Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15) }
            print(String(format: "policy: %5d rules  parse %@  compile %@  %6.1f ns/eval  %6.2f M evals/s  decided by a rule %4.1f%%  allocations in %d evals: %llu  (sink %d)",
                set.rules.count, ms(t1 - t0), ms(t2 - t1), best, 1e3 / best, 100 * Double(decided) / Double(qs.count), passes * perPass, allocs, sink))
        }
        let ratio = results[2].nsPerEval / results[0].nsPerEval
        print(String(format: "policy: %d-rule cost / %d-rule cost = %.2fx (bar <= 5x); %d rules: %.2f M evals/s per core (bar >= 5 M)",
            results[2].rules, results[0].rules, ratio, results[2].rules, 1e3 / results[2].nsPerEval))
        try blocklist(100_000)
    }

    /// A CIDR+port blocklist of `n` rules (the shape of the public ones: /24s and /32s, some /16s,
    /// some IPv6 /48s, most with a port or a protocol): parse and compile time (CPU) and what the
    /// compiled policy holds in RSS, then evaluations/s against it (≤ 64 MB, ≤ 2 s).
    static func blocklistText(_ n: Int) -> String {
        var rng = Rng(s: 0x5EED)
        var lines = ["default allow", "default in block"]
        lines.reserveCapacity(n + 2)
        for i in 0..<n {
            let a = 1 + rng.int(222), b = rng.int(256), c = rng.int(256)
            let port = [443, 80, 22, 25, 53, 8080, 1024 + rng.int(60000)][rng.int(7)]
            switch rng.int(20) {
            case 0..<9: lines.append("block proto tcp to \(a).\(b).\(c).0/24 port \(port) name cidr-\(i)")
            case 9..<14: lines.append("block to \(a).\(b).\(c).\(rng.int(256)) port \(port), \(port + 1) name host-\(i)")
            case 14..<16: lines.append("block proto udp to \(a).\(b).0.0/16 port \(port) name net-\(i)")
            case 16..<18: lines.append("reject proto tcp to 2001:db8:\(String(rng.int(65536), radix: 16))::/48 port \(port) name v6-\(i)")
            default: lines.append("block to \(a).\(b).\(c).0/24 name plain-\(i)")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func blocklist(_ n: Int) throws {
        var text = blocklistText(n)
        _ = glibcMallocTrim(0)
        let rssBefore = HostsBench.rss()
        let (w0, t0) = (benchWallClock(), benchCPUClock())
        let set = PolicyParser.parse(text, file: "blocklist.rules")
        let (w1, t1) = (benchWallClock(), benchCPUClock())
        guard !set.hasErrors else { throw PolicyLoadError(message: "blocklist rules do not parse: \(set.errors[0])") }
        text = ""
        _ = glibcMallocTrim(0)
        let rssSet = HostsBench.rss()
        let policy = CompiledPolicy(set)
        let (w2, t2) = (benchWallClock(), benchCPUClock())
        _ = glibcMallocTrim(0)  // give back what compiling freed, so RSS shows what stays
        let rssPolicy = HostsBench.rss()
        var rng = Rng(s: 7)
        let qs = queries(policy, 1 << 16, &rng)
        var sink: Int32 = 0
        var best = Double.infinity
        for _ in 0..<3 {
            let start = threadCPUNanoseconds()
            for i in 0..<1_000_000 { sink &+= policy.evaluate(qs[i & (qs.count - 1)]).ruleIndex }
            best = min(best, Double(threadCPUNanoseconds() - start) / 1e6)
        }
        print(String(format: "policy: blocklist of %d CIDR+port rules: parse %.0f ms CPU (%.0f wall), compile %.0f ms CPU (%.0f wall; bar <= 2000); RSS: parsed set +%.1f MB, compiled policy +%.1f MB (bar <= 64), %.2f M evals/s (sink %d)",
                     set.rules.count, Double(t1 - t0) / 1e6, Double(w1 - w0) / 1e6, Double(t2 - t1) / 1e6, Double(w2 - w1) / 1e6,
                     Double(rssSet - rssBefore) / 1e6, Double(rssPolicy - rssSet) / 1e6, 1e3 / best, sink))
    }
}

/// CPU time consumed by the calling thread, in nanoseconds.
func threadCPUNanoseconds() -> UInt64 { SystemClock.threadCPUNanoseconds() }
