import Core
import Packet
import Testing

@testable import Policy

/// Parses one line and returns its only rule (failing when there are errors).
func rule(_ line: String) throws -> PolicyRule {
    let set = PolicyParser.parse("default allow\ndefault in block\n" + line)
    #expect(set.errors.isEmpty, "\(set.errors)")
    return try #require(set.rules.first)
}

/// The first error of a one-line file, as `line:column: message`.
func firstError(_ text: String) -> String? {
    PolicyParser.parse(text).errors.first.map { "\($0.location.line):\($0.location.column): \($0.message)" }
}

@Suite struct ParserTests {
    @Test func actionsAndDefaults() throws {
        let set = PolicyParser.parse("""
            # comment line
            default block   # trailing comment
            default in allow
            allow port 1
            block port 2
            reject port 3
            """)
        #expect(set.errors.isEmpty && set.warnings.isEmpty, "\(set.diagnostics)")
        #expect(set.rules.map(\.action) == [.allow, .block, .reject])
        #expect(set.defaultOut.action == .block && set.defaultOut.location?.line == 2)
        #expect(set.defaultOut.text == "default block")
        #expect(set.defaultIn.action == .allow && set.defaultIn.location?.line == 3)
        #expect(set.rules[0].location == SourceLocation(file: "test.rules", line: 4, column: 1))
        let out = PolicyParser.parse("default out reject\ndefault in reject")
        #expect(out.defaultOut.action == .reject && out.defaultIn.action == .reject && out.diagnostics.isEmpty)
    }

    @Test func missingDefaultsWarnAndUseTheDocumentedOnes() {
        let set = PolicyParser.parse("block port 25")
        #expect(set.defaultOut.action == .allow && set.defaultOut.location == nil)
        #expect(set.defaultIn.action == .block && set.defaultIn.location == nil)
        #expect(set.errors.isEmpty)
        #expect(set.warnings.map(\.message) == [
            "no 'default' line; outbound flows that match no rule are allowed (add 'default allow' or 'default block')",
            "no 'default in' line; inbound flows that match no rule are blocked (add 'default in block' or 'default in allow')",
        ])
    }

    @Test func everyField() throws {
        let r = try rule(#"reject in peer alice, bob tier premium proto tcp,udp from 10.0.0.0/8, fd00::/8 to 192.0.2.1 sport 1024-65535 port 22, 80,443-444 host example.com, *.Example.NET. during 22:00-07:00 mon-fri name my-rule reason "say \"no\" \\ politely""#)
        #expect(r.action == .reject && r.direction == .in)
        #expect(r.peers == ["alice", "bob"])
        #expect(r.tier == .premium)
        #expect(r.protocols == [.tcp, .udp])
        #expect(r.sources == [IPPrefix("10.0.0.0/8")!, IPPrefix("fd00::/8")!])
        #expect(r.destinations == [IPPrefix("192.0.2.1/32")!])
        #expect(r.sourcePorts == [PortRange(1024, 65535)])
        #expect(r.destinationPorts == [PortRange(22, 22), PortRange(80, 80), PortRange(443, 444)])
        #expect(r.hosts == [.exact("example.com"), .subdomains(of: "example.net")])
        #expect(r.window == TimeWindow(start: 22 * 60, end: 7 * 60, days: 0b1_1111))
        #expect(r.name == "my-rule")
        #expect(r.reason == #"say "no" \ politely"#)
        #expect(r.text.hasPrefix("reject in peer alice, bob") && r.text.hasSuffix(#"politely""#))
    }

    @Test func directionAndProtocols() throws {
        #expect(try rule("allow out").direction == .out)
        #expect(try rule("allow").direction == .out)
        #expect(try rule("allow proto any").protocols == [])
        #expect(try rule("allow proto tcp, any").protocols == [])
        #expect(try rule("allow proto icmp,icmpv6,icmp").protocols == [.icmp, .icmpv6])
        #expect(try rule("allow tier free").tier == .free)
    }

    @Test func ipv6Forms() throws {
        let r = try rule("block to ::, ::1, fe80::/10, 2001:db8::1:2/126, ::ffff:192.0.2.1, [fd99::2], 1:2:3:4:5:6:7:8/128, ::/0")
        #expect(r.destinations.map(\.description) == [
            "::/128", "::1/128", "fe80::/10", "2001:db8::1:0/126", "::ffff:192.0.2.1/128", "fd99::2/128",
            "1:2:3:4:5:6:7:8/128", "::/0",
        ])
        #expect(try rule("block from 0.0.0.0/0").sources.map(\.description) == ["0.0.0.0/0"])
        #expect(try rule("block from 10.1.2.3/8").sources.map(\.description) == ["10.0.0.0/8"])
    }

    @Test func portsAndRanges() throws {
        #expect(try rule("block port 0, 65535, 1-65535, 7-7").destinationPorts == [
            PortRange(0, 0), PortRange(65535, 65535), PortRange(1, 65535), PortRange(7, 7),
        ])
        #expect(try rule("block port 25 , 26").destinationPorts == [PortRange(25, 25), PortRange(26, 26)])
        #expect(try rule("block sport 53").sourcePorts == [PortRange(53, 53)])
    }

    @Test func windowsAndDays() throws {
        #expect(try rule("block during 09:00-17:00").window == TimeWindow(start: 540, end: 1020, days: 0x7F))
        #expect(try rule("block during 09:00-17:00 sat,sun").window?.days == 0b110_0000)
        #expect(try rule("block during 00:00-24:00 mon").window == TimeWindow(start: 0, end: 1440, days: 1))
        #expect(try rule("block during 22:00-07:00 fri-mon").window?.days == 0b111_0001)
        #expect(try rule("block during 08:00-09:00 mon, wed-thu, sun").window?.days == 0b100_1101)
        #expect(try rule("block during 08:00-09:00 mon-fri name x").name == "x")
        #expect(TimeWindow(start: 540, end: 1020, days: 0b110_0000).description == "09:00-17:00 sat,sun")
    }

    @Test func hostPatterns() throws {
        #expect(try rule("block host A.B-C.example, *.x_y.org").hosts == [.exact("a.b-c.example"), .subdomains(of: "x_y.org")])
    }

    @Test func filesAreReadInByteOrderOfTheirNames() {
        let set = PolicyParser.parse([
            PolicySource(name: "b.rules", text: "block port 4 name b"),
            PolicySource(name: "B.rules", text: "block port 1 name B\ndefault allow\ndefault in block"),
            PolicySource(name: "a.rules", text: "block port 3 name a1\nallow port 5 name a2"),
            PolicySource(name: "a-2.rules", text: "block port 2 name a-2"),
        ])
        #expect(set.files == ["B.rules", "a-2.rules", "a.rules", "b.rules"])
        #expect(set.rules.compactMap(\.name) == ["B", "a-2", "a1", "a2", "b"])
        #expect(set.rules[3].location == SourceLocation(file: "a.rules", line: 2, column: 1))
        #expect(set.diagnostics.isEmpty, "\(set.diagnostics)")
    }

    @Test func crlfAndIndentation() throws {
        let set = PolicyParser.parse("default allow\r\n  default in block\r\n\tblock port 25 # x\r\n")
        #expect(set.diagnostics.isEmpty, "\(set.diagnostics)")
        #expect(set.rules.first?.text == "block port 25")
        #expect(set.rules.first?.location.column == 2)
    }

    @Test(arguments: [
        ("block prot tcp", "1:7: unknown keyword 'prot', did you mean 'proto'?"),
        ("block to 10.0.0.0/8 prto tcp", "1:21: unknown keyword 'prto', did you mean 'proto'?"),
        ("blok port 25", "1:1: expected allow, block, reject or default, found 'blok', did you mean 'block'?"),
        ("deny port 25", "1:1: expected allow, block, reject or default, found 'deny'"),
        ("block frobnicate", "1:7: unknown keyword 'frobnicate'"),
        (", block", "1:1: expected allow, block, reject or default, found ','"),
        ("block port 25 allow", "1:15: 'allow' can only start a rule; one rule per line"),
        ("default", "1:8: expected an action after 'default' (allow, block or reject), found end of line"),
        ("default alow", "1:9: unknown action 'alow', did you mean 'allow'?; 'default' takes [in|out] allow|block|reject"),
        ("default allow port 25", "1:15: unexpected 'port' after 'default allow'; a default takes no match fields"),
        ("default allow\ndefault block", "2:1: a second 'default' line; the first is at test.rules:1"),
        ("default in allow\ndefault in block", "2:1: a second 'default in' line; the first is at test.rules:1"),
        ("block port 25 port 26", "1:15: 'port' given twice; put the values in one list, e.g. 'port A, B'"),
        ("block in out", "1:10: direction given twice; a rule is either 'in' or 'out'"),
        ("block port", "1:11: expected ports, found end of line"),
        ("block port 25,", "1:15: expected ports, found end of line"),
        ("block port 25,,26", "1:15: expected ports, found ','"),
        ("block port ,25", "1:12: expected ports, found ','"),
        ("block port 65536", "1:12: '65536' is not a port (0-65535)"),
        ("block port -1", "1:12: '' is not a port (0-65535)"),
        ("block port 80-", "1:15: '' is not a port (0-65535)"),
        ("block port 90-80", "1:12: port range '90-80' is backwards; write 80-90"),
        ("block port http", "1:12: 'http' is not a port (0-65535)"),
        ("block port to", "1:12: expected ports, found keyword 'to'"),
        ("block sport 1-2-3", "1:15: '2-3' is not a port (0-65535)"),
        ("block proto tcpp", "1:13: unknown protocol 'tcpp', did you mean 'tcp'?; use tcp, udp, icmp, icmpv6 or any"),
        ("block proto 6", "1:13: unknown protocol '6'; use tcp, udp, icmp, icmpv6 or any"),
        ("block tier Gold", "1:12: 'Gold' is not a tier name; a tier name is 1-32 characters of a-z, 0-9, _ and -, starting with a letter"),
        ("block tier", "1:11: expected a tier name after 'tier' (free, premium or a [Tier NAME] of tunneld.conf), found end of line"),
        ("block to 10.0.0.256", "1:10: '10.0.0.256' is not an IPv4 or IPv6 address, a CIDR block or 'gateway'"),
        ("block to 10.0.0.0/33", "1:19: '33' is not a prefix length for IPv4 (0-32)"),
        ("block to fd00::/129", "1:17: '129' is not a prefix length for IPv6 (0-128)"),
        ("block to 10.0.0.0/", "1:19: '' is not a prefix length for IPv4 (0-32)"),
        ("block to 10.0.0.0/x", "1:19: 'x' is not a prefix length for IPv4 (0-32)"),
        ("block to x/8", "1:10: 'x' is not an IPv4 or IPv6 address"),
        ("block from fd00:::1", "1:12: 'fd00:::1' is not an IPv4 or IPv6 address, a CIDR block or 'gateway'"),
        ("block from [fd00::1", "1:12: '[fd00::1': missing ']'"),
        ("block peer al!ce", "1:12: 'al!ce' is not a peer name (letters, digits, '-', '_', '.')"),
        ("block peer", "1:11: expected peer names, found end of line"),
        ("block host *", "1:12: '*' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)"),
        ("block host a.*.com", "1:12: 'a.*.com' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)"),
        ("block host a..com", "1:12: 'a..com' is not a host pattern; use a name (example.com) or '*.' and a name (*.example.com)"),
        ("block during", "1:13: expected a time window after 'during', e.g. during 22:00-07:00 mon-fri, found end of line"),
        ("block during 22:00", "1:14: '22:00' is not a time window; write HH:MM-HH:MM, e.g. during 22:00-07:00"),
        ("block during 25:00-07:00", "1:14: '25:00' is not a time of day (HH:MM, 00:00-23:59)"),
        ("block during 22:00-7:00", "1:20: '7:00' is not a time of day (HH:MM, 00:00-23:59, or 24:00 as an end)"),
        ("block during 24:00-07:00", "1:14: '24:00' is not a time of day (HH:MM, 00:00-23:59)"),
        ("block during 22:00-24:01", "1:20: '24:01' is not a time of day (HH:MM, 00:00-23:59, or 24:00 as an end)"),
        ("block during 08:00-08:00", "1:14: time window '08:00-08:00' is empty; use 00:00-24:00 for a whole day"),
        ("block during 08:00-09:00 mon-fry", "1:30: unknown day 'fry', did you mean 'fri'?; use mon tue wed thu fri sat sun, ranges (mon-fri) or lists (sat,sun)"),
        ("block during 08:00-09:00 sat,sunday", "1:30: unknown day 'sunday'; use mon tue wed thu fri sat sun, ranges (mon-fri) or lists (sat,sun)"),
        ("block during 08:00-09:00 monday", "1:26: unknown day 'monday'; use mon tue wed thu fri sat sun, ranges (mon-fri) or lists (sat,sun)"),
        ("block name", "1:11: expected a name after 'name', found end of line"),
        ("block name \"x\"", "1:12: expected a name after 'name', found 'x'"),
        ("block name a/b", "1:12: 'a/b' is not a rule name (letters, digits, '-', '_', '.')"),
        ("block reason", "1:13: expected a quoted text after 'reason', e.g. reason \"no SMTP\""),
        ("block reason spam", "1:14: expected a quoted text after 'reason', e.g. reason \"no SMTP\""),
        ("block reason \"open", "1:14: unterminated string; close it with '\"'"),
        ("block \"x\"", "1:7: unexpected string; quoted text goes after 'reason'"),
        ("block\u{1}", "1:6: control character 0x1 in rule text"),
    ])
    func errors(text: String, expected: String) {
        #expect(firstError(text) == expected)
    }

    @Test func errorsKeepGoingAndCarryTheFile() {
        let set = PolicyParser.parse([PolicySource(name: "p/10.rules", text: "block prot tcp\nallow port 22\nblok\n")])
        #expect(set.errors.map(\.description) == [
            "p/10.rules:1:7: error: unknown keyword 'prot', did you mean 'proto'?",
            "p/10.rules:3:1: error: expected allow, block, reject or default, found 'blok', did you mean 'block'?",
        ])
        #expect(set.rules.count == 1 && set.rules[0].location.line == 2)
        #expect(set.hasErrors)
    }

    @Test func semanticWarnings() {
        let set = PolicyParser.parse("""
            default allow
            default in block
            block proto icmp port 22
            block from 10.0.0.0/8 to fd00::/8
            block proto icmpv6 to 10.0.0.0/8
            block proto tcp port 20-30 to 10.0.0.0/8
            allow proto tcp port 22 to 10.1.0.0/16 name shadowed
            allow proto tcp port 22 to 10.1.0.0/16 during 09:00-10:00
            allow in proto tcp port 22 to 10.1.0.0/16
            """)
        #expect(set.errors.isEmpty)
        #expect(set.warnings.map { "\($0.location.line): \($0.message)" } == [
            "3: ports only exist for tcp and udp; this rule (proto icmp) never matches",
            "4: 'from' and 'to' are of different address families (IPv4 vs IPv6); this rule never matches",
            "5: icmp is for IPv4 and icmpv6 for IPv6; with these addresses this rule never matches",
            "7: rule never decides anything: every flow it matches is matched first by test.rules:6 (block proto tcp port 20-30 to 10.0.0.0/8)",
            "8: rule never decides anything: every flow it matches is matched first by test.rules:6 (block proto tcp port 20-30 to 10.0.0.0/8)",
        ])
    }

    @Test func everyTruncationParsesOrFailsWithAPlace() {
        let text = #"""
            default in block # c
            reject in peer alice, bob tier premium proto tcp,udp from 10.0.0.0/8, [fd00::]/8 to 192.0.2.1 sport 1024-65535 port 22, 80,443-444 host example.com, *.Example.NET. during 22:00-07:00 mon-fri,sun name my-rule reason "say \"no\" \\ politely"
            """#
        let bytes = Array(text.utf8)
        for n in 0...bytes.count {
            let prefix = String(decoding: bytes[..<n], as: UTF8.self)
            let set = PolicyParser.parse(prefix)
            let lines = prefix.split(separator: "\n", omittingEmptySubsequences: false)
            for d in set.diagnostics where d.location.line > 0 {
                #expect(d.location.line <= max(1, lines.count) && d.location.column >= 1, "\(n): \(d)")
                #expect(d.location.column <= lines[d.location.line - 1].utf8.count + 1, "\(n): \(d)")
            }
        }
        // Malformed bytes: invalid UTF-8 is replaced, never a crash.
        let set = PolicyParser.parse(String(decoding: [0x62, 0x6C, 0x6F, 0x63, 0x6B, 0x20, 0xFF, 0xFE], as: UTF8.self))
        #expect(set.errors.first?.message == "unknown keyword '\u{FFFD}\u{FFFD}'")
    }

    @Test func duplicateNames() {
        let set = PolicyParser.parse("default allow\ndefault in block\nblock port 1 name x\nblock port 2 name x\n")
        #expect(set.warnings.map(\.description) == ["test.rules:4:1: warning: name 'x' is already used by test.rules:3; explanations will be ambiguous"])
    }

    @Test func hostShadowing() {
        let set = PolicyParser.parse("default allow\ndefault in block\nblock host *.a.com\nblock host x.a.com, *.y.a.com\nblock host a.com\n")
        #expect(set.warnings.map(\.location.line) == [4])
    }
}
