import Config
import Core
import Testing

/// `AddressAllocator.next`: the lowest free host per family, skipping the gateway's own
/// addresses and every peer's AllowedIPs; a full subnet is a clear error.
@Suite struct AddressAllocatorTests {
    func a(_ s: String) -> InterfaceAddress { InterfaceAddress(s)! }
    func p(_ s: String) -> IPPrefix { IPPrefix(s)! }
    func next(_ iface: [String], _ taken: [String]) throws(ValueError) -> [String] {
        try AddressAllocator.next(interface: iface.map(a), taken: taken.map(p)).map(\.description)
    }

    @Test func firstAddressesOfBothFamilies() throws {
        #expect(try next(["10.99.0.1/24", "fd99::1/64"], []) == ["10.99.0.2/32", "fd99::2/128"])
    }

    @Test func holesAreFilledLowestFirst() throws {
        #expect(try next(["10.99.0.1/24"], ["10.99.0.2/32", "10.99.0.4/32"]) == ["10.99.0.3/32"])
        #expect(try next(["10.99.0.1/24"], ["10.99.0.3/32", "10.99.0.2/32"]) == ["10.99.0.4/32"])
    }

    @Test func v4Only() throws {
        #expect(try next(["192.168.1.1/24"], ["192.168.1.2/32"]) == ["192.168.1.3/32"])
    }

    @Test func v6Only() throws {
        #expect(try next(["fd99::1/64"], ["fd99::2/128", "fd99::4/127"]) == ["fd99::3/128"])
        #expect(try next(["fd99::1/64"], ["fd99::2/127", "fd99::4/127"]) == ["fd99::6/128"])
        #expect(try next(["fd99::1/64"], ["fd99::/120"]) == ["fd99::100/128"])
    }

    @Test func manuallyAddedPeerInTheMiddle() throws {
        // Peers .2-.4, a manual /30 at .8-.11, and a manual one at .5: the next is .6, then .7, then .12.
        let taken = ["10.99.0.2/32", "10.99.0.3/32", "10.99.0.4/32", "10.99.0.5/32", "10.99.0.8/30"]
        #expect(try next(["10.99.0.1/24"], taken) == ["10.99.0.6/32"])
        #expect(try next(["10.99.0.1/24"], taken + ["10.99.0.6/31"]) == ["10.99.0.12/32"])
    }

    @Test func gatewayAddressInTheMiddleIsSkipped() throws {
        #expect(try next(["10.99.0.2/24"], []) == ["10.99.0.1/32"])
        #expect(try next(["10.99.0.2/24"], ["10.99.0.1/32"]) == ["10.99.0.3/32"])
    }

    @Test func fullSubnetIsAClearError() {
        let e = ValueError("no free address left in 10.99.0.0/30 (the gateway's own and every peer's AllowedIPs take them)",
                           hint: "give one with --ip ADDR, or use a wider Address in [Interface]")
        #expect(throws: e) { try next(["10.99.0.1/30"], ["10.99.0.2/32"]) }
        #expect(throws: e) { try next(["10.99.0.1/30"], ["10.99.0.0/30"]) }  // broadcast .3 is never given
        #expect(throws: ValueError.self) { try next(["10.99.0.1/32"], []) }
        #expect(throws: ValueError.self) { try next(["fd99::1/127"], ["fd99::/128"]) }
        // v4 full fails the whole request even when v6 has room.
        #expect(throws: e) { try next(["10.99.0.1/30", "fd99::1/64"], ["10.99.0.2/32"]) }
    }

    @Test func wideRoutesThroughAPeerDoNotTakeAddresses() throws {
        #expect(try next(["10.99.0.1/24"], ["0.0.0.0/0", "10.0.0.0/8"]) == ["10.99.0.2/32"])
    }

    @Test func exhaustiveSmallSubnets() throws {
        // Every subset of taken hosts of a /29 against a direct reference.
        let hosts = (1...6).map { "10.99.0.\($0)" }
        for mask in 0..<(1 << 6) {
            let taken = hosts.enumerated().filter { mask & (1 << $0.offset) != 0 && $0.offset != 0 }.map { $0.element + "/32" }
            let expected = hosts.dropFirst().first { !taken.contains($0 + "/32") }
            if let expected {
                #expect(try next(["10.99.0.1/29"], taken) == [expected + "/32"])
            } else {
                #expect(throws: ValueError.self) { try next(["10.99.0.1/29"], taken) }
            }
        }
    }

    @Test func randomPrefixesAgainstAScan() throws {
        // A /26 with random peer prefixes of any length and a random gateway address, against a
        // scan of every host address.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let gw = UInt32.random(in: 1...62, using: &rng)
            let taken = (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                IPPrefix(IPAddress(v4: 0x0A00_0000 | UInt32.random(in: 0...63, using: &rng)), length: Int.random(in: 24...32, using: &rng))!
            }
            let expected = (1...62).map { IPAddress(v4: 0x0A00_0000 | UInt32($0)) }.first { a in
                a.v4 & 63 != gw && !taken.contains { $0.length >= 26 && $0.contains(a) }
            }
            let iface = [InterfaceAddress(address: IPAddress(v4: 0x0A00_0000 | gw), prefixLength: 26)]
            if let expected {
                #expect(try AddressAllocator.next(interface: iface, taken: taken) == [IPPrefix(expected, length: 32)!], "\(gw) \(taken)")
            } else {
                #expect(throws: ValueError.self) { try AddressAllocator.next(interface: iface, taken: taken) }
            }
        }
    }
}
