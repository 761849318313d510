// `tunnelbench hosts`: host-learning extractor rates (ClientHellos, DNS answers, QUIC Initials)
// with allocations per packet, and a 100,000-name blocklist's compile time and memory.
import Core
import Foundation
import Packet
import Policy
import Runtime

/// Rates are per second of this thread's CPU time (per core). Each loop's allocation count is
/// read from the process-wide counter (`Alloc.swift`) around the loop only. Options:
/// `--rounds N` (scales every loop), `--names N` (100000, the blocklist size).
/// glibc's malloc_trim(3) (in <malloc.h>, which the Glibc module does not export).
@_silgen_name("malloc_trim") func glibcMallocTrim(_ pad: Int) -> Int32

enum HostsBench {
    static let name = "hosts"
    static let summary = "host learning: ClientHellos/s, DNS answers/s, QUIC Initials/s (allocations), 100k-name blocklist"

    static func run(_ args: [String]) throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
            return v
        }
        let rounds = option("--rounds", 200)
        clientHellos(rounds: rounds)
        dnsAnswers(rounds: rounds)
        quicInitials(rounds: rounds)
        try blocklist(names: option("--names", 100_000))
    }

    /// Runs `body` `count` times; prints the rate and the allocations per iteration.
    static func measure(_ label: String, count: Int, _ body: () -> Int) {
        var sink = body()  // warm up
        let allocBefore = allocationCount()
        let cpuStart = benchCPUClock()
        for _ in 0..<count { sink &+= body() }
        let cpu = Double(benchCPUClock() - cpuStart)
        let allocs = allocationCount() - allocBefore
        print(String(format: "hosts: %@: %.0f k/s per core (%.0f ns CPU each), %d runs, allocations per packet: %.2f (sink %d)",
                     label, Double(count) / cpu * 1e6, cpu / Double(count), count, Double(allocs) / Double(count), sink & 1))
    }

    // MARK: - TLS

    /// A Chrome-like ClientHello of about 1,800 bytes (GREASE, a post-quantum-sized key share, SNI late).
    static func clientHello(name: String) -> [UInt8] {
        func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        var body: [UInt8] = [3, 3] + [UInt8](repeating: 0x5A, count: 32) + [32] + [UInt8](repeating: 7, count: 32)
        body += be16(16) + [0x3A, 0x3A, 0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0xC0, 0x2B, 0xC0, 0x2F, 0xC0, 0x2C, 0xC0, 0x30] + [1, 0]
        var ext: [UInt8] = []
        func add(_ t: Int, _ b: [UInt8]) { ext += be16(t) + be16(b.count) + b }
        add(0x0A0A, [])
        add(0x0017, [])
        add(0x002B, [6, 0x6A, 0x6A, 3, 4, 3, 3])
        add(0x000D, be16(8) + [4, 3, 8, 4, 4, 1, 5, 3])
        add(0x0033, be16(1222) + be16(0x11EC) + be16(1216) + [UInt8](repeating: 0x33, count: 1216))
        add(0x0010, be16(12) + [2, 0x68, 0x32, 8] + Array("http/1.1".utf8) + [])
        let n = Array(name.utf8)
        add(0x0000, be16(n.count + 3) + [0] + be16(n.count) + n)
        add(0xFAFA, [0])
        body += be16(ext.count) + ext
        let hs: [UInt8] = [1, 0] + be16(body.count) + body
        return [22, 3, 1] + be16(hs.count) + hs
    }

    static func clientHellos(rounds: Int) {
        let hellos = (0..<64).map { clientHello(name: "host\($0).cdn\($0 % 7).example.com") }
        let buffer = FirstFlightBuffer()
        var k = 0
        measure("ClientHello SNI, one segment", count: rounds * 500) {
            k = (k + 1) & 63
            return hellos[k].withUnsafeBytes { b in
                if case .found(let r) = TLSClientHello.serverName(in: b) { return r.count }
                return 0
            }
        }
        // Two segments (MSS 1380), the second first: reassembled, then read.
        measure("ClientHello SNI, 2 segments out of order + reassembly", count: rounds * 500) {
            k = (k + 1) & 63
            return hellos[k].withUnsafeBytes { b in
                let isn = UInt32(truncatingIfNeeded: k &* 0x9E37_79B9)
                buffer.reset(initialSequence: isn)
                buffer.insert(sequence: isn &+ 1380, UnsafeRawBufferPointer(rebasing: b[1380...]))
                buffer.insert(sequence: isn, UnsafeRawBufferPointer(rebasing: b[..<1380]))
                if case .found(let r) = TLSClientHello.serverName(in: buffer.contiguous) { return r.count }
                return 0
            }
        }
        let requests = (0..<64).map { Array("GET /index.html HTTP/1.1\r\nUser-Agent: Mozilla/5.0\r\nAccept: */*\r\nHost: site\($0).example.org\r\n\r\n".utf8) }
        measure("HTTP Host", count: rounds * 2000) {
            k = (k + 1) & 63
            return requests[k].withUnsafeBytes { b in
                if case .found(let r) = HTTPRequestHost.host(in: b) { return r.count }
                return 0
            }
        }
    }

    // MARK: - DNS

    /// `www.siteN.example` CNAME `siteN.edge.cdn.example`, two A and one AAAA, compressed.
    static func dnsAnswer(_ i: Int) -> [UInt8] {
        func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func name(_ s: String) -> [UInt8] { s.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0] }
        var m: [UInt8] = be16(i & 0xFFFF) + [0x81, 0x80] + be16(1) + be16(4) + be16(0) + be16(0)
        m += name("www.site\(i).example") + be16(1) + be16(1)
        let target = m.count + 12
        m += [0xC0, 12] + be16(5) + be16(1) + [0, 0, 0, 60] + be16(name("site\(i).edge.cdn.example").count) + name("site\(i).edge.cdn.example")
        for k in 0..<2 { m += [0xC0 | UInt8(target >> 8), UInt8(target & 0xFF)] + be16(1) + be16(1) + [0, 0, 1, 44] + be16(4) + [198, 51, UInt8(i & 0xFF), UInt8(k)] }
        m += [0xC0 | UInt8(target >> 8), UInt8(target & 0xFF)] + be16(28) + be16(1) + [0, 0, 1, 44] + be16(16) + [0x20, 1, 0xD, 0xB8] + [UInt8](repeating: 0, count: 10) + be16(i & 0xFFFF)
        return m
    }

    static func dnsAnswers(rounds: Int) {
        let answers = (0..<256).map(dnsAnswer)
        let parser = DNSAnswers()
        let cache = AddressNameCache(capacity: 65536, hashSeed: 7)
        var k = 0
        measure("DNS answer parse (CNAME + 2 A + AAAA)", count: rounds * 2000) {
            k = (k + 1) & 255
            return answers[k].withUnsafeBytes { parser.parse($0) == .answered ? parser.answerCount : 0 }
        }
        var now: Int64 = 0
        measure("DNS answer parse + learn into the per-peer cache", count: rounds * 2000) {
            k = (k + 1) & 255
            now += 1
            return answers[k].withUnsafeBytes { b in
                guard parser.parse(b) == .answered else { return 0 }
                cache.learn(peer: UInt32(k & 15), from: parser, now: now)
                return parser.answerCount
            }
        }
        measure("cache lookup by address (hit, names iterated)", count: rounds * 5000) {
            k = (k + 1) & 255
            var n = 0
            for name in cache.names(peer: UInt32(k & 15), address: IPAddress(v4: 0xC633_0000 | UInt32(k) << 8), now: now) { n += name.count }
            return n
        }
        print("hosts: cache holds \(cache.count) addresses, \(cache.evictions) evicted")
    }

    // MARK: - QUIC

    static func quicInitials(rounds: Int) {
        let packets = [QUICBenchVectors.v1Packet, QUICBenchVectors.v2Packet]
        let reader = QUICInitialReader()
        let crypto = FirstFlightBuffer()
        var k = 0
        measure("QUIC Initial (RFC 9001/9369 A.2, 1200 B), keys cached: decrypt + ClientHello SNI", count: rounds * 100) {
            k ^= 1
            crypto.reset()
            return packets[k].withUnsafeBytes { d in
                if case .clientHello(.found(let r)) = reader.read(datagram: d, into: crypto) { return r.count }
                return 0
            }
        }
        // A new DCID every packet: the first Initial of a new connection derives its keys (the
        // packet then fails authentication, as the bench cannot seal for a new DCID; the cost is
        // key derivation + header protection + a full GCM pass).
        var fresh = packets[0]
        var counter: UInt32 = 0
        measure("QUIC Initial, new DCID each (HKDF via libsodium HMAC-SHA256 + decrypt)", count: rounds * 20) {
            counter &+= 1
            fresh[6] = UInt8(truncatingIfNeeded: counter)
            fresh[7] = UInt8(truncatingIfNeeded: counter >> 8)
            fresh[8] = UInt8(truncatingIfNeeded: counter >> 16)
            crypto.reset()
            return fresh.withUnsafeBytes { reader.read(datagram: $0, into: crypto) == .failed(.decryptionFailed) ? 1 : 0 }
        }
        print("hosts: QUIC key derivations: \(reader.derivations)")
    }

    // MARK: - Blocklist

    /// Resident set size of this process, bytes (from /proc/self/statm).
    static func rss() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func blocklist(names count: Int) throws {
        // A list like the public ones: hosts-file lines and plain names, 2-4 labels, ~25 bytes.
        var rng = BenchRandom(seed: 100_000)
        var text = "# generated blocklist\n"
        var nameBytes = 0
        let tlds = ["com", "net", "org", "io", "de", "co.uk", "info"]
        for i in 0..<count {
            var name = ""
            let labels = 1 + Int(rng.next() % 3)
            for _ in 0..<labels { name += String(Int(rng.next() % 1_000_000), radix: 36) + "." }
            name += "n\(i)." + tlds[Int(rng.next() % UInt64(tlds.count))]
            nameBytes += name.utf8.count
            text += i % 2 == 0 ? "0.0.0.0 \(name)\n" : "\(name)\n"
        }
        let path = NSTemporaryDirectory() + "tunnelbench-blocklist-\(getpid()).txt"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        defer { unlink(path) }
        text = ""
        let rules = "default allow\ndefault in block\nblock host @\(path) name blocklist\nblock proto tcp port 25\n"
        let rssBefore = rss()
        let (w0, t0) = (benchWallClock(), benchCPUClock())
        let set = PolicyParser.parse([PolicySource(name: "bench.rules", text: rules)])
        let (w1, t1) = (benchWallClock(), benchCPUClock())
        let policy = CompiledPolicy(set)
        let (w2, t2) = (benchWallClock(), benchCPUClock())
        let rssSet = rss()
        guard set.errors.isEmpty, let hosts = set.rules.first?.hosts.count else {
            print("hosts: blocklist did not load: \(set.errors.prefix(3))")
            return
        }
        _ = glibcMallocTrim(0)  // give back what parsing and compiling freed, so RSS shows what stays
        let rssLive = rss()
        print(String(format: "hosts: blocklist of %d names (%d bytes of names): parse %.0f ms CPU (%.0f wall; reading the file included), compile %.0f ms CPU (%.0f wall); RSS +%.1f MB after compile, +%.1f MB held (parsed set + compiled policy, after malloc_trim)",
                     hosts, nameBytes, Double(t1 - t0) / 1e6, Double(w1 - w0) / 1e6, Double(t2 - t1) / 1e6, Double(w2 - w1) / 1e6,
                     Double(rssSet - rssBefore) / 1e6, Double(rssLive - rssBefore) / 1e6))
        // Lookups against the compiled policy: listed, below-listed (not matched) and unlisted names.
        var q = PolicyQuery(proto: .tcp, source: IPAddress(v4: 0x0A63_0002), destination: IPAddress(v4: 0xC633_6401), sourcePort: 40000, destinationPort: 443)
        let probes = ["n7.com", "x.n7.com", "not-listed.example.org"] + (0..<61).map { "probe\($0).example" }
        var blocked = 0
        var k = 0
        measure("evaluate with host (100k-name list)", count: 200_000) {
            k = (k + 1) & 63
            q.host = probes[k]
            let v = policy.evaluate(q)
            if v.action == .block { blocked += 1 }
            return Int(v.ruleIndex)
        }
        // A flow known by its DNS names (two per address), decided without making Strings.
        let cache = AddressNameCache(capacity: 1024)
        for a in 0..<64 {
            for n in [probes[a], "n\(a * 2).com"] {
                Array(n.utf8).withUnsafeBytes { cache.learn(peer: 1, address: IPAddress(v4: UInt32(a)), name: $0, ttl: 300, now: 0) }
            }
        }
        q.host = nil
        measure("evaluate by DNS names (2 per address, any matching counts)", count: 200_000) {
            k = (k + 1) & 63
            let v = policy.evaluate(q, anyOf: cache.names(peer: 1, address: IPAddress(v4: UInt32(k)), now: 1))
            return Int(v.ruleIndex)
        }
        withExtendedLifetime(set) {}
    }
}
