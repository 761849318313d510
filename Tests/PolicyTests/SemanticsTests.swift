import Core
import Packet
import Testing

@testable import Policy

/// Compiles `text` (which must parse without errors).
func compile(_ text: String) throws -> CompiledPolicy {
    let set = PolicyParser.parse(text)
    try #require(set.errors.isEmpty, "\(set.errors)")
    return CompiledPolicy(set)
}

func tcp(_ src: String, _ dst: String, _ dport: UInt16, sport: UInt16 = 40000) -> ReferenceFlow {
    ReferenceFlow(proto: .tcp, source: IPAddress(src)!, destination: IPAddress(dst)!, sourcePort: sport, destinationPort: dport)
}

extension CompiledPolicy {
    /// Evaluates and checks the compiled result against the reference; returns (action, rule name or "default").
    func decide(_ f: ReferenceFlow) -> String {
        let v = evaluate(f.query(self))
        let (a, i) = LinearReference.evaluate(Array(rules), out: defaultOut.action, in: defaultIn.action, f)
        #expect(v.action == a && Int(v.ruleIndex) == i, "compiled \(v) reference \(a) \(i) for \(f)")
        return "\(v.action) " + (v.isDefault ? "default" : rules[Int(v.ruleIndex)].name ?? "#\(v.ruleIndex)")
    }
}

@Suite struct SemanticsTests {
    @Test func firstMatchWinsAcrossFiles() throws {
        let set = PolicyParser.parse([
            PolicySource(name: "20.rules", text: "block port 22 name second\nallow port 80 name late"),
            PolicySource(name: "10.rules", text: "default block\ndefault in block\nallow port 22 to 10.0.0.1 name first"),
        ])
        let p = CompiledPolicy(set)
        #expect(p.decide(tcp("10.99.0.2", "10.0.0.1", 22)) == "allow first")
        #expect(p.decide(tcp("10.99.0.2", "10.0.0.2", 22)) == "block second")
        #expect(p.decide(tcp("10.99.0.2", "10.0.0.2", 80)) == "allow late")
        #expect(p.decide(tcp("10.99.0.2", "10.0.0.2", 81)) == "block default")
        let v = p.evaluate(tcp("10.99.0.2", "10.0.0.1", 22).query(p))
        let e = p.explain(v)
        #expect(e.location == SourceLocation(file: "10.rules", line: 3, column: 1))
        #expect(e.text == "allow port 22 to 10.0.0.1 name first" && e.name == "first" && e.reason == nil && !e.isDefault)
        #expect(e.summary == "10.rules:3: allow port 22 to 10.0.0.1 name first")
    }

    @Test func defaultsBothDirections() throws {
        let p = try compile("default reject\ndefault in allow\nblock in port 22 name in22\nblock port 23 name out23")
        var f = tcp("10.99.0.2", "192.0.2.1", 22)
        #expect(p.decide(f) == "reject default")
        f.direction = .in
        #expect(p.decide(f) == "block in22")
        f.destinationPort = 23
        #expect(p.decide(f) == "allow default")
        let e = p.explain(p.evaluate(f.query(p)))
        #expect(e.isDefault && e.text == "default in allow" && e.location?.line == 2 && e.summary == "default (test.rules:2: default in allow)")
        let builtIn = CompiledPolicy(PolicyParser.parse(""))
        #expect(builtIn.decide(tcp("1.1.1.1", "2.2.2.2", 1)) == "allow default")
        f.destinationPort = 1
        #expect(builtIn.decide(f) == "block default")
        #expect(builtIn.explain(builtIn.evaluate(f.query(builtIn))).summary == "default (built-in default: block inbound)")
    }

    @Test func rejectVersusBlock() throws {
        let p = try compile("default allow\ndefault in block\nreject proto udp port 6881 name r\nblock proto tcp port 6881 name b")
        var f = tcp("10.99.0.2", "192.0.2.1", 6881)
        #expect(p.decide(f) == "block b")
        f.proto = .udp
        #expect(p.decide(f) == "reject r")
    }

    @Test func v4AndV6() throws {
        let p = try compile("""
            default allow
            default in block
            block to 10.0.0.0/8 name v4
            block to fc00::/7 name v6
            block from ::/0 to 2001:db8::/32 port 443 name v6any
            block from 0.0.0.0/0 proto icmp name icmp4
            """)
        #expect(p.decide(tcp("10.99.0.2", "10.255.255.255", 80)) == "block v4")
        #expect(p.decide(tcp("10.99.0.2", "11.0.0.0", 80)) == "allow default")
        #expect(p.decide(tcp("10.99.0.2", "9.255.255.255", 80)) == "allow default")
        #expect(p.decide(tcp("fd99::2", "fd00::1", 80)) == "block v6")
        #expect(p.decide(tcp("fd99::2", "fc00::", 80)) == "block v6")
        #expect(p.decide(tcp("fd99::2", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 80)) == "allow default")
        #expect(p.decide(tcp("fd99::2", "fe00::", 80)) == "allow default")
        // An IPv4-mapped IPv6 address is IPv6: it does not match IPv4 prefixes.
        #expect(p.decide(tcp("fd99::2", "::ffff:10.0.0.1", 80)) == "allow default")
        #expect(p.decide(tcp("fd99::2", "2001:db8:ffff::1", 443)) == "block v6any")
        #expect(p.decide(tcp("10.99.0.2", "192.0.2.1", 443)) == "allow default")
        let ping = ReferenceFlow(proto: .icmp, source: IPAddress("10.99.0.2")!, destination: IPAddress("192.0.2.1")!)
        #expect(p.decide(ping) == "block icmp4")
        let ping6 = ReferenceFlow(proto: .icmpv6, source: IPAddress("fd99::2")!, destination: IPAddress("2001:db9::1")!)
        #expect(p.decide(ping6) == "allow default")
        let hostV6 = try compile("default allow\ndefault in block\nblock to ::1, ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff name edge")
        #expect(hostV6.decide(tcp("fd99::2", "::1", 1)) == "block edge")
        #expect(hostV6.decide(tcp("fd99::2", "::2", 1)) == "allow default")
        #expect(hostV6.decide(tcp("fd99::2", "::", 1)) == "allow default")
        #expect(hostV6.decide(tcp("fd99::2", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1)) == "block edge")
        #expect(hostV6.decide(tcp("fd99::2", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 1)) == "allow default")
    }

    @Test func portRangeEdges() throws {
        let p = try compile("default allow\ndefault in block\nblock port 0, 100-200, 65535 name p\nblock sport 53 name s")
        for (port, expected) in [(0, "block p"), (1, "allow default"), (99, "allow default"), (100, "block p"), (150, "block p"),
            (200, "block p"), (201, "allow default"), (65534, "allow default"), (65535, "block p")]
        {
            #expect(p.decide(tcp("10.99.0.2", "192.0.2.1", UInt16(port))) == expected, "port \(port)")
        }
        #expect(p.decide(tcp("10.99.0.2", "192.0.2.1", 1, sport: 53)) == "block s")
        #expect(p.decide(tcp("10.99.0.2", "192.0.2.1", 1, sport: 54)) == "allow default")
        // Ports never match a protocol without ports, even a port 0 rule.
        let icmp = ReferenceFlow(proto: .icmp, source: IPAddress("10.99.0.2")!, destination: IPAddress("192.0.2.1")!)
        #expect(p.decide(icmp) == "allow default")
    }

    @Test func peersAndTiers() throws {
        let p = try compile("default allow\ndefault in block\nallow peer alice port 22 name a\nblock port 22 name b\nreject tier free name f")
        #expect(p.peerID(named: "alice") != .unknown && p.peerID(named: "mallory") == .unknown)
        var f = tcp("10.99.0.2", "192.0.2.1", 22)
        f.peer = "alice"
        #expect(p.decide(f) == "allow a")
        f.peer = "bob"
        #expect(p.decide(f) == "block b")
        f.peer = nil
        f.destinationPort = 80
        #expect(p.decide(f) == "allow default")
        f.tier = .free
        #expect(p.decide(f) == "reject f")
        f.tier = .premium
        #expect(p.decide(f) == "allow default")
        // An id from another policy that is out of range is treated as unknown.
        var q = f.query(p)
        q.peer = PolicyPeerID(rawValue: 999)
        q.destinationPort = 22
        #expect(p.evaluate(q).ruleIndex == 1)
    }

    @Test func hostPatternEdges() throws {
        let p = try compile("""
            default allow
            default in block
            block host example.com name exact
            block host *.ads.net name sub
            allow host *.good.ads.net name good
            """)
        func h(_ host: String?) -> String {
            var f = tcp("10.99.0.2", "192.0.2.1", 443)
            f.host = host
            return p.decide(f)
        }
        #expect(h("example.com") == "block exact")
        #expect(h("EXAMPLE.com.") == "block exact")
        #expect(h("a.example.com") == "allow default")
        #expect(h("xexample.com") == "allow default")
        #expect(h("example.co") == "allow default")
        #expect(h("ads.net") == "allow default")  // *.ads.net does not match ads.net itself
        #expect(h("x.ads.net") == "block sub")
        #expect(h("a.b.c.ads.net") == "block sub")
        #expect(h("x.good.ads.net") == "block sub")  // first match: the broader block comes first
        #expect(h("badads.net") == "allow default")
        #expect(h(".ads.net") == "allow default")  // an empty label is not a subdomain
        #expect(h("") == "allow default")
        #expect(h(nil) == "allow default")  // no host known: host rules do not match
        #expect(HostPattern.subdomains(of: "ads.net").matches("ads.net") == false)
        // Without a host the verdict is the default, but a host could still change it: pending.
        let unknown = tcp("10.99.0.2", "192.0.2.1", 443)
        #expect(p.verdictDependsOnHost(unknown.query(p), p.evaluate(unknown.query(p))))
        let q = try compile("default allow\ndefault in block\nblock port 443 name web\nblock host x.com name h")
        #expect(!q.verdictDependsOnHost(unknown.query(q), q.evaluate(unknown.query(q))))  // decided before any host rule
        var other = unknown
        other.destinationPort = 80
        #expect(q.verdictDependsOnHost(other.query(q), q.evaluate(other.query(q))))
        let none = try compile("default allow\ndefault in block\nblock port 443")
        #expect(!none.verdictDependsOnHost(unknown.query(none), none.evaluate(unknown.query(none))))
        #expect(HostPattern.exact("example.com").matches("Example.Com") == true)
    }

    @Test func duringWindows() throws {
        let p = try compile("""
            default allow
            default in block
            block during 22:00-07:00 mon-fri name night
            block during 09:00-17:00 sat,sun name weekend
            block during 23:00-01:00 sun name wrap
            """)
        func at(_ day: Int, _ h: Int, _ m: Int) -> String {
            var f = tcp("10.99.0.2", "192.0.2.1", 80)
            f.minuteOfWeek = day * 1440 + h * 60 + m
            return p.decide(f)
        }
        #expect(at(0, 21, 59) == "allow default")
        #expect(at(0, 22, 0) == "block night")  // Monday 22:00
        #expect(at(1, 6, 59) == "block night")  // Tuesday morning belongs to Monday's window
        #expect(at(1, 7, 0) == "allow default")
        #expect(at(0, 3, 0) == "allow default")  // Monday 03:00: Sunday is not in mon-fri, and wrap ended at 01:00
        #expect(at(0, 0, 59) == "block wrap")  // Sunday 23:00-01:00 wraps into Monday
        #expect(at(0, 1, 0) == "allow default")
        #expect(at(5, 6, 59) == "block night")  // Saturday morning: Friday's window
        #expect(at(5, 8, 59) == "allow default")
        #expect(at(5, 9, 0) == "block weekend")
        #expect(at(6, 16, 59) == "block weekend")
        #expect(at(6, 17, 0) == "allow default")
        #expect(at(6, 22, 59) == "allow default")
        #expect(at(6, 23, 0) == "block wrap")
        #expect(at(6, 2, 0) == "allow default")  // Sunday morning: Saturday not in mon-fri
        // Boundaries: Mon 00:00 → next is Mon 01:00 (wrap ends).
        #expect(p.minutesToNextBoundary(afterMinuteOfWeek: 0) == 60)
        #expect(p.minutesToNextBoundary(afterMinuteOfWeek: 60) == 21 * 60)  // → Mon 22:00
        #expect(p.minutesToNextBoundary(afterMinuteOfWeek: 22 * 60) == 9 * 60)  // → Tue 07:00
        #expect(p.minutesToNextBoundary(afterMinuteOfWeek: 6 * 1440 + 23 * 60) == 120)  // Sun 23:00 → Mon 01:00
        #expect(p.minutesToNextBoundary(afterMinuteOfWeek: 6 * 1440 + 17 * 60) == 360)  // → Sun 23:00
        #expect(try compile("default allow\ndefault in block\nblock").minutesToNextBoundary(afterMinuteOfWeek: 5) == nil)
        // A whole-week window never changes anything: no boundary.
        #expect(try compile("default allow\ndefault in block\nblock during 00:00-24:00").minutesToNextBoundary(afterMinuteOfWeek: 5) == nil)
        // Epoch form: 2026-03-02 is a Monday; 21:30 UTC+1 local → boundary at 22:00 local = 21:00 UTC.
        let mon2130local = Int64(PolicyClock.daysFromCivil(year: 2026, month: 3, day: 2)!) * 86400 + 20 * 3600 + 30 * 60 + 17
        #expect(p.nextBoundary(afterEpochSeconds: mon2130local, utcOffsetSeconds: 3600) == mon2130local - 17 + 30 * 60)
    }

    @Test func clock() {
        // 1970-01-01 00:00 UTC was a Thursday.
        #expect(PolicyClock.minuteOfWeek(epochSeconds: 0, utcOffsetSeconds: 0) == 3 * 1440)
        #expect(PolicyClock.minuteOfWeek(epochSeconds: 0, utcOffsetSeconds: -60) == 3 * 1440 - 1)
        #expect(PolicyClock.minuteOfWeek(epochSeconds: -1, utcOffsetSeconds: 0) == 3 * 1440 - 1)
        #expect(PolicyClock.minuteOfWeek(year: 2026, month: 3, day: 2, hour: 22, minute: 30) == 22 * 60 + 30)  // Monday
        #expect(PolicyClock.minuteOfWeek(year: 2000, month: 2, day: 29, hour: 0, minute: 0) == 1 * 1440)  // Tuesday
        #expect(PolicyClock.minuteOfWeek(year: 2026, month: 11, day: 29, hour: 12, minute: 0) == 6 * 1440 + 720)  // Sunday
        #expect(PolicyClock.minuteOfWeek(year: 2025, month: 2, day: 29, hour: 0, minute: 0) == nil)
        #expect(PolicyClock.minuteOfWeek(year: 2026, month: 13, day: 1, hour: 0, minute: 0) == nil)
        #expect(PolicyClock.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        #expect(PolicyClock.daysFromCivil(year: 1969, month: 12, day: 31) == -1)
    }
}
