import Core
import Foundation
import Store
import Testing

@testable import tunnelctl

/// `policy test --config` and `explain 'FLOW'` decide a flow through one function: for 1,000
/// random flows over the shipped policies and a configuration with free and premium peers (one of
/// them moved to premium by a store override), they give the same verdict and the same rule.
@Suite struct FlowDecisionAgreementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func policyTestAndExplainAgreeOnRandomFlows() throws {
        _ = HistoryFixture.setUp
        let dir = NSTemporaryDirectory() + "tv-agree-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let policies = Self.root.appendingPathComponent("policies").path
        let config = dir + "/tunneld.conf"
        try """
            [Interface]
            PrivateKey = BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=
            Address = 10.99.0.1/24, fd99::1/64
            StateDirectory = \(dir)/state
            RuntimeDirectory = \(dir)/run
            PolicyDirectory = \(policies)

            [Peer]
            Name = alice
            PublicKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=
            AllowedIPs = 10.99.0.2/32, fd99::2/128
            Tier = free

            [Peer]
            Name = bob
            PublicKey = AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=
            AllowedIPs = 10.99.0.3/32, fd99::3/128
            Tier = premium

            [Peer]
            Name = carol
            PublicKey = AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=
            AllowedIPs = 10.99.0.4/32
            """.write(toFile: config, atomically: true, encoding: .utf8)
        try StateStore(path: dir + "/state/state.db").setTier(peer: "carol", tier: .premium, at: HistoryFixture.now)

        var rng = SystemRandomNumberGenerator()
        let peerSides = ["10.99.0.2", "10.99.0.3", "10.99.0.4", "10.99.0.9", "[fd99::2]", "[fd99::3]"]
        let v4Far = ["192.168.1.10", "192.168.1.1", "10.0.0.5", "8.8.8.8", "203.0.113.7", "10.99.0.1", "169.254.1.1", "172.16.4.4"]
        let v6Far = ["[fd99::1]", "[fc00::5]", "[2001:db8::1]", "[fe80::1]"]
        let ports: [UInt16] = [22, 25, 53, 80, 443, 587, 6881, 6885, 6889, 6890, 27000, 27015, 27051, 8080]
        let extras = ["", " tier free", " tier premium", " peer alice", " peer bob", " in"]
        var compared = 0
        for i in 0..<1000 {
            let src = peerSides.randomElement(using: &rng)!
            let v6 = src.hasPrefix("[")
            let proto = ["tcp", "udp", v6 ? "icmpv6" : "icmp"][Int.random(in: 0..<3, using: &rng)]
            let dst = (v6 ? v6Far : v4Far).randomElement(using: &rng)!
            let day = Int.random(in: 1...7, using: &rng), hour = Int.random(in: 0...23, using: &rng)
            let at = String(format: " at 2026-03-%02dT%02d:%02d", day, hour, [0, 30, 59][i % 3])
            let sp = proto.hasPrefix("icmp") ? "" : ":\(Int.random(in: 1024...65535, using: &rng))"
            let dp = proto.hasPrefix("icmp") ? "" : ":\(ports.randomElement(using: &rng)!)"
            let text = "\(proto) \(src)\(sp) -> \(dst)\(dp)\(extras.randomElement(using: &rng)!)\(at)"
            let test = try decision(["policy", "test", "--json", "--config", config, text])
            let explain = try decision(["explain", "--json", "--config", config, text])
            #expect(test.code == explain.code, "\(text)")
            // Never vacuous: both name a verdict, and a rule object or the default.
            #expect(test.json["verdict"] is String && explain.json["verdict"] is String, "\(text)")
            #expect(test.json["default"] as? Bool == true || test.json["rule"] is [String: Any], "\(text)")
            for key in ["verdict", "rule", "default"] {
                #expect(Self.canonical(test.json[key]) == Self.canonical(explain.json[key]), "\(key) differs for \(text)")
            }
            let tf = test.json["flow"] as? [String: Any], ef = explain.json["flow"] as? [String: Any]
            for key in ["peer", "tier"] {
                #expect(Self.canonical(tf?[key]) == Self.canonical(ef?[key]), "flow.\(key) differs for \(text)")
            }
            compared += 1
        }
        #expect(compared == 1000)
    }

    /// Sorted-keys JSON text of a value (for comparing objects).
    static func canonical(_ value: Any?) -> String {
        guard let value, !(value is NSNull) else { return "null" }
        guard JSONSerialization.isValidJSONObject([value]),
              let data = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys]) else { return "\(value)" }
        return String(decoding: data, as: UTF8.self)
    }

    func decision(_ argv: [String]) throws -> (code: ExitCode, json: [String: Any]) {
        let console = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: console)
        let parsed = try? JSONSerialization.jsonObject(with: Data(console.out.utf8))
        let object = try #require(parsed as? [String: Any], "\(argv): \(console.err)")
        return (code, object)
    }

    @Test func policyCheckWithConfigWarnsOnUnknownPeers() throws {
        let dir = NSTemporaryDirectory() + "tv-peers-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir + "/policies", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "allow peer alice, alcie proto tcp port 22\n".write(toFile: dir + "/policies/10.rules", atomically: true, encoding: .utf8)
        try """
            [Interface]
            PrivateKey = BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=
            Address = 10.99.0.1/24
            PolicyDirectory = \(dir)/policies

            [Peer]
            Name = alice
            PublicKey = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=
            AllowedIPs = 10.99.0.2/32
            """.write(toFile: dir + "/tunneld.conf", atomically: true, encoding: .utf8)
        let console = Console(capturing: true)
        let code = Tunnelctl.run(["policy", "check", "--config", dir + "/tunneld.conf"], console: console)
        #expect(code == .ok, "a warning, not an error")
        #expect(console.out.contains("10.rules:1:19: warning: 'peer alcie': no configured peer is called 'alcie', did you mean 'alice'? (configured: alice)"))
        let plain = Console(capturing: true)
        _ = Tunnelctl.run(["policy", "check", dir + "/policies"], console: plain)
        #expect(!plain.out.contains("alcie'"), "without a configuration there is nothing to compare with")
    }
}
