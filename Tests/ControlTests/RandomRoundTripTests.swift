import Core
import Packet
import Testing
@testable import Config
@testable import ControlProtocol

/// SplitMix64: a seeded generator so failures reproduce.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SplitMix {
    mutating func key() -> WireGuardKey { WireGuardKey(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &self) })! }
    mutating func prefix() -> IPPrefix {
        if Bool.random(using: &self) {
            return IPPrefix(IPAddress(v4: UInt32.random(in: 0...UInt32.max, using: &self)), length: Int.random(in: 0...32, using: &self))!
        }
        let a = IPAddress(v6High: UInt64.random(in: 0...UInt64.max, using: &self), low: UInt64.random(in: 0...UInt64.max, using: &self))
        return IPPrefix(a, length: Int.random(in: 0...128, using: &self))!
    }
    mutating func endpoint() -> HostPort {
        let p = prefix()
        return HostPort(host: p.address.description, port: UInt16.random(in: 1...65535, using: &self))
    }
}

@Suite struct RandomRoundTripTests {
    /// Random UAPI set requests written the way `wg set` writes them (wireguard-tools
    /// `userspace_set_device`) parse back to the same request.
    @Test func uapiSetRoundTrip() throws {
        var rng = SplitMix(state: 0x5EED_0001)
        for _ in 0..<300 {
            var r = UAPISetRequest()
            var lines: [String] = []
            if Bool.random(using: &rng) { r.privateKey = rng.key(); lines.append("private_key=\(r.privateKey!.hex)") }
            if Bool.random(using: &rng) { r.listenPort = .random(in: 0...65535, using: &rng); lines.append("listen_port=\(r.listenPort!)") }
            if Bool.random(using: &rng) { r.fwmark = .random(in: 0...UInt32.max, using: &rng); lines.append("fwmark=\(r.fwmark!)") }
            if Bool.random(using: &rng) { r.replacePeers = true; lines.append("replace_peers=true") }
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                var p = UAPIPeerUpdate(publicKey: rng.key())
                lines.append("public_key=\(p.publicKey.hex)")
                if Int.random(in: 0..<5, using: &rng) == 0 {
                    p.remove = true
                    lines.append("remove=true")
                    r.peers.append(p)
                    continue
                }
                if Bool.random(using: &rng) { p.presharedKey = rng.key(); lines.append("preshared_key=\(p.presharedKey!.hex)") }
                if Bool.random(using: &rng) { p.endpoint = rng.endpoint(); lines.append("endpoint=\(p.endpoint!)") }
                if Bool.random(using: &rng) {
                    p.persistentKeepaliveInterval = .random(in: 0...65535, using: &rng)
                    lines.append("persistent_keepalive_interval=\(p.persistentKeepaliveInterval!)")
                }
                if Bool.random(using: &rng) { p.replaceAllowedIPs = true; lines.append("replace_allowed_ips=true") }
                for _ in 0..<Int.random(in: 0...3, using: &rng) {
                    let a = rng.prefix()
                    p.allowedIPs.append(a)
                    lines.append("allowed_ip=\(a)")
                }
                r.peers.append(p)
            }
            #expect(try UAPICodec.parseSet(lines) == r, "\(lines)")
        }
    }

    /// Random device snapshots survive encodeGet → parseGet.
    @Test func uapiGetRoundTrip() throws {
        var rng = SplitMix(state: 0x5EED_0002)
        for _ in 0..<300 {
            var d = UAPIDeviceSnapshot(
                privateKey: Bool.random(using: &rng) ? rng.key() : nil, listenPort: .random(in: 0...65535, using: &rng),
                fwmark: Bool.random(using: &rng) ? .random(in: 0...UInt32.max, using: &rng) : 0)
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                d.peers.append(UAPIPeerSnapshot(
                    publicKey: rng.key(), presharedKey: Bool.random(using: &rng) ? rng.key() : nil,
                    endpoint: Bool.random(using: &rng) ? rng.endpoint() : nil, lastHandshakeSec: .random(in: 0...Int64.max, using: &rng),
                    lastHandshakeNsec: .random(in: 0..<1_000_000_000, using: &rng), txBytes: .random(in: 0...UInt64.max, using: &rng),
                    rxBytes: .random(in: 0...UInt64.max, using: &rng), persistentKeepaliveInterval: .random(in: 0...65535, using: &rng),
                    allowedIPs: (0..<Int.random(in: 0...3, using: &rng)).map { _ in rng.prefix() }))
            }
            let lines = (UAPICodec.encodeGet(d) + "errno=0").split(separator: "\n")
            #expect(try UAPICodec.parseGet(lines) == d)
        }
    }

    /// Random configs written as an operator would write them parse back to the same values;
    /// cross-peer AllowedIPs checks agree with a brute-force reference.
    @Test func configRoundTripAndOverlapReference() throws {
        var rng = SplitMix(state: 0x5EED_0003)
        var sawError = false
        var sawWarning = false
        for round in 0..<150 {
            var text = "[Interface]\nPrivateKey = \(rng.key().base64)\nAddress = 10.99.0.1/24\n"
            var peers: [PeerConfig] = []
            for i in 0..<Int.random(in: 0...5, using: &rng) {
                var p = PeerConfig(name: "peer\(i)", publicKey: rng.key())
                p.tier = Bool.random(using: &rng) ? .free : .premium
                if Bool.random(using: &rng) { p.presharedKey = rng.key() }
                if Bool.random(using: &rng) { p.endpoint = rng.endpoint() }
                if Bool.random(using: &rng) { p.persistentKeepalive = .random(in: 1...65535, using: &rng) }
                // Few, short prefixes from a small space so that overlaps happen.
                p.allowedIPs = (0..<Int.random(in: 1...2, using: &rng)).map { _ in
                    IPPrefix(IPAddress(v4: 0x0A63_0000 | UInt32.random(in: 0...3, using: &rng) << 6), length: [24, 26, 32].randomElement(using: &rng)!)!
                }
                p.allowedIPs = p.allowedIPs.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
                peers.append(p)
                text += "\n[Peer]\nName = \(p.name)\nPublicKey = \(p.publicKey.base64)\nTier = \(p.tier.rawValue)\n"
                if let k = p.presharedKey { text += "PresharedKey = \(k.base64)\n" }
                if let e = p.endpoint { text += "Endpoint = \(e)\n" }
                if let k = p.persistentKeepalive { text += "PersistentKeepalive = \(k)\n" }
                text += "AllowedIPs = " + p.allowedIPs.map(\.description).joined(separator: ", ") + "\n"
            }
            // Reference: identical prefixes in two peers → error; nested → warning.
            var identical = 0
            var nested = 0
            for i in peers.indices {
                for j in peers.indices where j > i {
                    for a in peers[i].allowedIPs {
                        for b in peers[j].allowedIPs {
                            if a == b { identical += 1 } else if a.contains(b.address) && a.length <= b.length || b.contains(a.address) && b.length <= a.length { nested += 1 }
                        }
                    }
                }
            }
            do {
                let c = try TunnelConfig.parse(text, file: "r\(round)")
                #expect(identical == 0, "round \(round): expected an error")
                #expect(c.peers == peers, "round \(round)")
                #expect(c.warnings.count == nested, "round \(round)")
                sawWarning = sawWarning || nested > 0
            } catch {
                #expect(identical > 0, "round \(round): \(error)")
                #expect(error.errors.count == identical)
                sawError = true
            }
        }
        #expect(sawError && sawWarning, "the generator must exercise both outcomes")
    }
}
