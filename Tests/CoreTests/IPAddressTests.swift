import Core
import Testing
@testable import Core

@Suite struct IPAddressTests {
    @Test(arguments: [
        ("10.0.0.1", "10.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("fd99::1", "fd99::1"), ("::", "::"), ("::1", "::1"), ("1::", "1::"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"), ("2001:DB8::A", "2001:db8::a"),
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
        ("1:0:3:4:5:6:7:8", "1:0:3:4:5:6:7:8"),
    ])
    func parsesAndPrints(text: String, canonical: String) throws {
        let a = try #require(IPAddress(text))
        #expect(a.description == canonical)
        #expect(IPAddress(canonical) == a)
    }

    @Test(arguments: [
        "", "1", "1.2.3", "1.2.3.4.5", "256.0.0.1", "01.2.3.4", "1..2.3", "a.b.c.d", ":", ":::", "1:::2",
        "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "g::1", "1:", ":1", "::1.2.3.4.5", "1.2.3.4:",
    ])
    func rejectsNonAddresses(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func prefixes() throws {
        let p = try #require(IPPrefix("192.168.7.9/16"))
        #expect(p.description == "192.168.0.0/16")
        #expect(p.contains(IPAddress("192.168.255.1")!))
        #expect(!p.contains(IPAddress("192.169.0.1")!))
        #expect(!p.contains(IPAddress("::ffff:192.168.0.1")!))
        let v6 = try #require(IPPrefix("fd99::7/65"))
        #expect(v6.description == "fd99::/65")
        #expect(v6.contains(IPAddress("fd99::7fff:0:0:1")!))
        #expect(!v6.contains(IPAddress("fd99::8000:0:0:1")!))
        #expect(IPPrefix("0.0.0.0/0")!.contains(IPAddress("8.8.8.8")!))
        #expect(IPPrefix("::/0")!.contains(IPAddress("fd99::1")!))
        #expect(IPPrefix("10.0.0.1/33") == nil)
        #expect(IPPrefix("10.0.0.1/") == nil)
        #expect(IPPrefix("fd99::/129") == nil)
        #expect(IPPrefix("10.0.0.1")!.length == 32)
    }
}
