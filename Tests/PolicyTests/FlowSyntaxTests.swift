import Core
import Packet
import Testing

@testable import Policy

@Suite struct FlowSyntaxTests {
    @Test func fullForm() throws {
        let f = try PolicyFlow(parsing: "tcp 10.99.0.2:40000 -> 192.168.1.5:22 peer alice tier free host Example.COM in at 2026-03-02T22:30")
        #expect(f.proto == .tcp && f.source == IPAddress("10.99.0.2") && f.sourcePort == 40000)
        #expect(f.destination == IPAddress("192.168.1.5") && f.destinationPort == 22)
        #expect(f.peer == "alice" && f.tier == .free && f.host == "example.com" && f.direction == .in)
        #expect(f.minuteOfWeek == 22 * 60 + 30 && f.at == "2026-03-02T22:30")
        #expect(f.description == "tcp 10.99.0.2:40000 -> 192.168.1.5:22 peer alice tier free host example.com in at 2026-03-02T22:30")
    }

    @Test func shortFormsAndIPv6() throws {
        let a = try PolicyFlow(parsing: "udp [fd99::2]:5353 -> [2001:db8::1]:53")
        #expect(a.source == IPAddress("fd99::2") && a.sourcePort == 5353 && a.destinationPort == 53 && a.direction == .out)
        #expect(a.peer == nil && a.tier == nil && a.host == nil && a.minuteOfWeek == nil)
        #expect(a.description == "udp [fd99::2]:5353 -> [2001:db8::1]:53 out")
        let b = try PolicyFlow(parsing: "icmpv6 fd99::2 -> 2001:db8::1")
        #expect(b.proto == .icmpv6 && b.destination == IPAddress("2001:db8::1"))
        #expect(b.description == "icmpv6 fd99::2 -> 2001:db8::1 out")
        let c = try PolicyFlow(parsing: "tcp 10.0.0.1->10.0.0.2:80 out")
        #expect(c.sourcePort == 0 && c.destinationPort == 80)
        let d = try PolicyFlow(parsing: "tcp [fd99::2] -> [fd99::3]:443")
        #expect(d.sourcePort == 0 && d.destinationPort == 443)
        // Without brackets an IPv6 "address:port" is read as an address (fd99::2:443 is one).
        let e = try PolicyFlow(parsing: "tcp fd99::2:443 -> [fd99::3]:443")
        #expect(e.source == IPAddress("fd99::2:443") && e.sourcePort == 0)
    }

    @Test(arguments: [
        ("", "too short; a flow is PROTO SRC[:PORT] -> DST[:PORT] [peer NAME] [tier NAME] [host NAME] [in|out] [at YYYY-MM-DDTHH:MM]"),
        ("tcp 10.0.0.1 -> ", "too short; a flow is PROTO SRC[:PORT] -> DST[:PORT] [peer NAME] [tier NAME] [host NAME] [in|out] [at YYYY-MM-DDTHH:MM]"),
        ("gre 10.0.0.1 -> 10.0.0.2", "'gre' is not a protocol; use tcp, udp, icmp or icmpv6"),
        ("tcp 10.0.0.1:1 => 10.0.0.2:2", "expected '->' after the source, found '=>'"),
        ("tcp 10.0.0:1 -> 10.0.0.2:2", "source '10.0.0' is not an IPv4 or IPv6 address (IPv6 with a port goes in brackets: [fd99::2]:443)"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:99999", "destination port '99999' is not a port (0-65535)"),
        ("tcp 10.0.0.1:x -> 10.0.0.2:2", "source port 'x' is not a port (0-65535)"),
        ("tcp 10.0.0.1: -> 10.0.0.2:2", "source port '' is not a port (0-65535)"),
        ("tcp [fd99::2 -> [fd99::3]:443", "source '[fd99::2': missing ']'"),
        ("tcp [fd99::2]443 -> [fd99::3]:443", "source '[fd99::2]443': expected ':PORT' after ']'"),
        ("icmp 10.0.0.1 -> 8.8.8.8 at 2026-11-29 12:00", "'2026-11-29' is not a local time; write YYYY-MM-DDTHH:MM, e.g. 2026-03-02T22:30"),
        ("tcp 10.0.0.1:1 -> [fd99::3]:443", "source and destination are of different address families"),
        ("icmp 10.0.0.1:1 -> 10.0.0.2", "icmp has no ports; drop ':1'"),
        ("icmp fd99::1 -> fd99::2", "icmp is for IPv4; use icmpv6 with IPv6 addresses"),
        ("icmpv6 10.0.0.1 -> 10.0.0.2", "icmpv6 is for IPv6; use icmp with IPv4 addresses"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 peer", "'peer' needs a value"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 peer a!b", "'a!b' is not a peer name"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 tier Gold", "'Gold' is not a tier name; a tier name is 1-32 characters of a-z, 0-9, _ and -, starting with a letter"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 host *.x.com", "'*.x.com' is not a host name"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 at 2026-02-30T10:00", "'2026-02-30T10:00' is not a local time; write YYYY-MM-DDTHH:MM, e.g. 2026-03-02T22:30"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 at 2026-02-03T24:00", "'2026-02-03T24:00' is not a local time; write YYYY-MM-DDTHH:MM, e.g. 2026-03-02T22:30"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 at tomorrow", "'tomorrow' is not a local time; write YYYY-MM-DDTHH:MM, e.g. 2026-03-02T22:30"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 in out", "'out' given twice"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 peer a peer b", "'peer' given twice"),
        ("tcp 10.0.0.1:1 -> 10.0.0.2:2 pear alice", "unknown word 'pear', did you mean 'peer'?; after the addresses come peer, tier, host, in|out, at"),
    ])
    func errors(text: String, message: String) {
        #expect(throws: PolicyFlowError(message: message)) { try PolicyFlow(parsing: text) }
    }

    @Test func everyTruncationIsAnErrorOrAFlow() {
        let text = "tcp [fd99::2]:40000 -> [2001:db8::1]:443 peer alice tier premium host a.example.com out at 2026-03-02T22:30"
        var parsed = 0
        for n in 0...text.count {
            if (try? PolicyFlow(parsing: String(text.prefix(n)))) != nil { parsed += 1 }
        }
        #expect(parsed > 5)
    }

    @Test func queryUsesThePolicysPeerIDsAndTheGivenTime() throws {
        let p = try compile("default allow\ndefault in block\nblock peer alice during 22:00-23:00 mon")
        let f = try PolicyFlow(parsing: "tcp 10.0.0.1:1 -> 10.0.0.2:2 peer alice")
        #expect(p.evaluate(f.query(for: p, minuteOfWeek: 22 * 60)).ruleIndex == 0)
        #expect(p.evaluate(f.query(for: p, minuteOfWeek: 23 * 60)).isDefault)
        let g = try PolicyFlow(parsing: "tcp 10.0.0.1:1 -> 10.0.0.2:2 peer alice at 2026-03-02T22:59")
        #expect(p.evaluate(g.query(for: p, minuteOfWeek: 0)).ruleIndex == 0)
    }
}

extension PolicyFlowError: Equatable {
    public static func == (a: PolicyFlowError, b: PolicyFlowError) -> Bool { a.message == b.message }
}
