import Config
import Core
import Testing

/// The cross-peer AllowedIPs check (identical = error, nested = warning) against the plain pairwise
/// loop it replaced (a slow reference), on random configs with prefixes of many lengths.
@Suite struct AllowedIPsOverlapTests {
    static func reference(_ peers: [(String, [IPPrefix])], lines: [Int]) -> [String] {
        var out: [String] = []
        for i in peers.indices {
            for j in peers.indices where j > i {
                for a in peers[i].1 {
                    for b in peers[j].1 where a.address.isIPv6 == b.address.isIPv6 {
                        if a == b {
                            out.append("t:\(lines[j]): AllowedIPs: \(b) is also allowed for peer '\(peers[i].0)' (line \(lines[i])); a prefix can belong to one peer only")
                        } else if a.length <= b.length ? a.contains(b.address) : b.contains(a.address) {
                            let (wide, narrow) = a.length < b.length ? (a, b) : (b, a)
                            out.append("t:\(lines[j]): AllowedIPs: \(b) of peer '\(peers[j].0)' overlaps \(a) of peer '\(peers[i].0)'; packets to \(narrow) go to the more specific peer; make the prefixes disjoint unless \(wide) is meant to exclude \(narrow)")
                        }
                    }
                }
            }
        }
        // The parser reports in line order (stable: same-line problems keep the loop's order).
        func line(_ m: String) -> Int { Int(m.dropFirst(2).prefix { $0 != ":" })! }
        return out.enumerated().sorted { (line($0.element), $0.offset) < (line($1.element), $1.offset) }.map(\.element)
    }

    @Test func agreesWithThePairwiseLoop() {
        var rng = SystemRandomNumberGenerator()
        let k1 = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        for _ in 0..<300 {
            let n = Int.random(in: 1...8, using: &rng)
            var text = "[Interface]\nPrivateKey = \(k1)\nAddress = 10.0.0.1/16\n"
            var peers: [(String, [IPPrefix])] = []
            var lines: [Int] = []
            var line = 4
            for p in 0..<n {
                var list: [IPPrefix] = []
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let v6 = Int.random(in: 0..<5, using: &rng) == 0
                    let pfx = v6 ? IPPrefix(IPAddress("fd00::\(Int.random(in: 0...3, using: &rng))")!, length: Int.random(in: 125...128, using: &rng))!
                                 : IPPrefix(IPAddress(v4: 0x0A00_0000 | UInt32.random(in: 0...15, using: &rng)), length: Int.random(in: 28...32, using: &rng))!
                    if !list.contains(pfx) { list.append(pfx) }
                }
                var key = [UInt8](repeating: 0, count: 32); key[0] = UInt8(p + 2)
                text += "[Peer]\nName = p\(p)\nPublicKey = \(WireGuardKey(bytes: key)!.base64)\nAllowedIPs = \(list.map(\.description).joined(separator: ", "))\n"
                peers.append(("p\(p)", list))
                lines.append(line)
                line += 4
            }
            let expected = Self.reference(peers, lines: lines)
            let got: [String]
            do {
                got = try TunnelConfig.parse(text, file: "t").warnings.map(\.description)
            } catch {
                got = error.errors.map(\.description)
                #expect(expected.contains { $0.contains("is also allowed") })
                #expect(got == expected.filter { $0.contains("is also allowed") }, "\(text)")
                continue
            }
            #expect(got == expected, "\(text)")
        }
    }
}
