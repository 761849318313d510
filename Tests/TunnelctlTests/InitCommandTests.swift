import Config
import Core
import Foundation
import Glibc
import Policy
import Testing
import WireGuard

@testable import tunnelctl

/// `tunnelctl init` into a temporary directory (no daemon, no root): the key (0600), a
/// configuration that parses and passes the policy check, the default policy set (or the rules
/// already there, kept), never an overwrite; the default policy set itself; `ClientDNS` in client
/// configs and `peer add --qr`.
@Suite struct InitCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        let c = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: c)
        return (code, c.out, c.err)
    }

    func tempDir() throws -> String {
        let dir = NSTemporaryDirectory() + "tv-init-\(getpid())-\(Int.random(in: 0...999_999))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    @Test func writesKeyConfigAndDefaultPolicyThenRefusesToOverwrite() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let conf = dir + "/etc/tunneld.conf"  // the directory is made
        let r = run(["init", "--config", conf, "--subnet", "10.77.0.0/24", "--subnet6", "fd77::/64", "--endpoint", "vpn.example.org",
                     "--dns", "10.77.0.1", "--wan", "lo"])
        #expect(r.code == .ok, "\(r.err)")
        #expect(mode(dir + "/etc/private.key") == 0o600)
        #expect(mode(conf) == 0o640)
        // The key is a key, and the printed public key is its.
        let keyText = try String(contentsOfFile: dir + "/etc/private.key", encoding: .utf8)
        let key = try #require(WireGuardKey(base64: keyText.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(r.out.contains(WireGuardKey(bytes: X25519.publicKey(of: key.bytes))!.base64))
        let config = try TunnelConfig.load(path: conf)
        #expect(config.interface.addresses.map(\.description) == ["10.77.0.1/24", "fd77::1/64"])
        #expect(config.interface.publicEndpoint?.description == "vpn.example.org:51820")
        #expect(config.interface.clientDNS == ["10.77.0.1"])
        #expect(config.interface.statusListen?.description == "10.77.0.1:80")
        #expect(config.interface.metricsListen?.description == "127.0.0.1:9586")
        #expect(config.interface.policyDirectory == dir + "/etc/policies")
        #expect(config.warnings.isEmpty && config.peers.isEmpty)
        // The default policy set, as shipped, byte for byte.
        let written = try FileManager.default.contentsOfDirectory(atPath: dir + "/etc/policies").sorted()
        #expect(written == Tunnelctl.defaultPolicySet.map(\.name))
        for (name, text) in Tunnelctl.defaultPolicySet {
            #expect(try String(contentsOfFile: dir + "/etc/policies/" + name, encoding: .utf8) == text)
            #expect(mode(dir + "/etc/policies/" + name) == 0o644)
        }
        // The next three commands, with this --config.
        #expect(r.out.contains("next:\n  tunneld --check-config --config \(conf)\n  systemctl enable --now tunneld"))
        #expect(r.out.contains("  tunnelctl peer add phone --qr --config \(conf)\n"))
        #expect(r.out.contains("up --subnet 10.77.0.0/24 --subnet6 fd77::/64 --out lo"))
        // The policy passes its check against this configuration: no errors, no warnings.
        let check = run(["policy", "check", "--config", conf])
        #expect(check.code == .ok && check.out.contains("0 errors, 0 warnings"), "\(check.out)")

        // Again: refused, naming the file, nothing changed.
        let before = try String(contentsOfFile: conf, encoding: .utf8)
        let again = run(["init", "--config", conf, "--subnet", "10.78.0.0/24"])
        #expect(again.code == .failure && again.err.contains("\(conf) exists: init never overwrites"), "\(again.err)")
        #expect(try String(contentsOfFile: conf, encoding: .utf8) == before)
        #expect(try String(contentsOfFile: dir + "/etc/private.key", encoding: .utf8) == keyText)
    }

    @Test func refusesAnExistingKeyAndKeepsExistingRules() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "not mine\n".write(toFile: dir + "/private.key", atomically: true, encoding: .utf8)
        let r = run(["init", "--config", dir + "/tunneld.conf", "--subnet", "10.77.0.0/24", "--subnet6", "off", "--endpoint", "192.0.2.1:4500"])
        #expect(r.code == .failure && r.err.contains("\(dir)/private.key exists"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/tunneld.conf"), "nothing written")
        try FileManager.default.removeItem(atPath: dir + "/private.key")
        // A policy directory with rules of its own (what the package installed): kept as it is.
        try FileManager.default.createDirectory(atPath: dir + "/policies", withIntermediateDirectories: true)
        try "default allow\ndefault in block\n".write(toFile: dir + "/policies/00-mine.rules", atomically: true, encoding: .utf8)
        let ok = run(["init", "--config", dir + "/tunneld.conf", "--subnet", "10.77.0.0/24", "--subnet6", "off", "--endpoint", "192.0.2.1:4500",
                      "--dns", "none"])
        #expect(ok.code == .ok, "\(ok.err)")
        #expect(ok.out.contains("kept: it has 1 rule file already"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/policies") == ["00-mine.rules"])
        let config = try TunnelConfig.load(path: dir + "/tunneld.conf")
        #expect(config.interface.addresses.map(\.description) == ["10.77.0.1/24"])
        #expect(config.interface.publicEndpoint?.description == "192.0.2.1:4500" && config.interface.listenPort == 51820)
        #expect(config.interface.clientDNS.isEmpty && ok.out.contains("ClientDNS: none (--dns none)"))
        #expect(!ok.out.contains("do not fit"), "\(ok.out)")
    }

    /// Rules already there that name peers, or refuse the gateway's services, are reported by
    /// init itself (the old example policy: alice and bob, the tunnel subnet blocked).
    @Test func keptRulesThatDoNotFitAreReported() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/policies", withIntermediateDirectories: true)
        try "default allow\ndefault in block\nallow peer alice proto tcp to 192.168.1.1 port 22\nblock to 10.0.0.0/8 name private-v4\n"
            .write(toFile: dir + "/policies/10-old.rules", atomically: true, encoding: .utf8)
        let r = run(["init", "--config", dir + "/tunneld.conf", "--subnet", "10.77.0.0/24", "--subnet6", "off", "--endpoint", "vpn.example.org"])
        #expect(r.code == .ok, "\(r.err)")
        #expect(r.out.contains("The rules kept in \(dir)/policies do not fit this configuration yet"), "\(r.out)")
        #expect(r.out.contains("10-old.rules:3:12: error: 'peer alice': no configured peer is called 'alice'"), "\(r.out)")
        #expect(r.out.contains("10-old.rules:4:1: warning: this rule (block to 10.0.0.0/8 name private-v4) blocks ping to the gateway (10.77.0.1)"), "\(r.out)")
    }

    @Test func usageErrorsWriteNothing() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let conf = dir + "/tunneld.conf"
        for args in [["--subnet", "10.77.0.0/31"], ["--subnet", "fd00::/64"], ["--subnet6", "10.0.0.0/24"], ["--endpoint", "a b"],
                     ["--dns", "10.0.0.1:53"], ["--listen-port", "0"], ["--wan", "no-such-interface0"]] {
            let r = run(["init", "--config", conf] + args)
            #expect(r.code == .usage, "\(args): \(r.code) \(r.err)")
            #expect(!FileManager.default.fileExists(atPath: conf) && !FileManager.default.fileExists(atPath: dir + "/private.key"))
        }
    }

    /// Without --subnet: a subnet that overlaps nothing this host routes or has (the test host's
    /// real tables), the first host the gateway's.
    @Test func detectedSubnetIsFreeOnThisHost() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = run(["init", "--config", dir + "/tunneld.conf", "--endpoint", "vpn.example.org"])
        #expect(r.code == .ok, "\(r.err)")
        let config = try TunnelConfig.load(path: dir + "/tunneld.conf")
        let host = Tunnelctl.hostNetwork()
        for a in config.interface.addresses {
            #expect(!host.prefixesInUse.contains { $0.address.isIPv6 == a.address.isIPv6 && ($0.contains(a.address) || a.subnet.contains($0.address)) },
                    "\(a) overlaps the host's networks")
        }
        #expect(config.interface.addresses.count == 2 && config.interface.addresses[1].address.description.hasPrefix("fd"))
    }

    /// The shipped default set is what tunnelctl carries (scripts/gen-docs.sh regenerates it).
    @Test func embeddedDefaultPolicySetIsPolicies() throws {
        let dir = Self.root.appendingPathComponent("policies").path
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".rules") }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(Tunnelctl.defaultPolicySet.map(\.name) == files, "run scripts/gen-docs.sh")
        for (name, text) in Tunnelctl.defaultPolicySet {
            #expect(try String(contentsOfFile: dir + "/" + name, encoding: .utf8) == text, "\(name) differs: run scripts/gen-docs.sh")
        }
    }

    /// The default set: names no peer, so it passes with none; lets a peer of any tier reach the
    /// status page, the gateway's DNS and ping (v4 and v6); blocks the rest of the gateway and of
    /// the private networks; and the examples (which name peers) say so at their top.
    @Test func defaultPolicySetServesEveryPeerTheGateway() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let conf = dir + "/tunneld.conf"
        try """
            [Interface]
            PrivateKey = \(key)
            Address = 10.42.7.1/24, fd42::1/64
            StatusListen = 10.42.7.1:80
            ClientDNS = 10.42.7.1, fd42::1
            StateDirectory = \(dir)/state
            RuntimeDirectory = \(dir)/run
            PolicyDirectory = \(Self.root.appendingPathComponent("policies").path)
            """.write(toFile: conf, atomically: true, encoding: .utf8)
        let check = run(["policy", "check", "--config", conf])
        #expect(check.code == .ok && check.out.contains("0 errors, 0 warnings"), "\(check.out)")
        let config = try TunnelConfig.load(path: conf)
        let set = try Tunnelctl.loadPolicy(config.interface.policyDirectory, config: config)
        #expect(set.unknownPeerReferences(configured: [], severity: .error).isEmpty)
        let policy = CompiledPolicy(set)
        #expect(!config.gatewayProbes.isEmpty && policy.refusals(of: config.gatewayProbes).isEmpty)
        func verdict(_ flow: String) -> String {
            let r = run(["policy", "test", "--config", conf, flow])
            return r.out.split(separator: "\n").first { $0.hasPrefix("rule") }.map(String.init) ?? r.err
        }
        #expect(verdict("udp 10.42.7.9:5000 -> 10.42.7.1:53 tier premium").contains("gateway-dns"))
        #expect(verdict("tcp [fd42::9]:5000 -> [fd42::1]:53 tier free").contains("gateway-dns"))
        #expect(verdict("tcp 10.42.7.9:5000 -> 10.42.7.1:80 tier free").contains("gateway-status"))
        #expect(verdict("icmp 10.42.7.9 -> 10.42.7.1 tier free").contains("gateway-ping"))
        #expect(verdict("icmpv6 [fd42::9] -> [fd42::1] tier free").contains("gateway-ping"))
        #expect(verdict("tcp 10.42.7.9:5000 -> 10.42.7.1:22 tier free").contains("gateway-other"))
        #expect(verdict("tcp 10.42.7.9:5000 -> 10.42.7.3:22 tier free").contains("private-v4"), "peer to peer")
        #expect(verdict("tcp 10.42.7.9:5000 -> 192.168.1.1:443 tier free").contains("private-v4"))
        #expect(verdict("tcp [fd42::9]:5000 -> [fe80::1]:443 tier free").contains("private-v6"))
        #expect(verdict("tcp 10.42.7.9:5000 -> 203.0.113.9:25 tier premium").contains("no-smtp"))
        #expect(verdict("tcp 10.42.7.9:5000 -> 203.0.113.9:443 tier free").contains("default"))
        // Every example names what it is at its top.
        let examples = Self.root.appendingPathComponent("examples/policies").path
        for f in try FileManager.default.contentsOfDirectory(atPath: examples) {
            #expect(try String(contentsOfFile: examples + "/" + f, encoding: .utf8).hasPrefix("# EXAMPLE"), "\(f)")
        }
        #expect(try String(contentsOfFile: Self.root.appendingPathComponent("examples/tunneld.conf").path, encoding: .utf8).hasPrefix("# EXAMPLE"))
    }

    /// `policy check --config` names the rule that refuses peers their gateway; `policy test`
    /// without a configuration will not guess what `gateway` is.
    @Test func policyCheckWarnsAndTestRefusesToGuessTheGateway() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/policies", withIntermediateDirectories: true)
        try "default allow\ndefault in block\nblock to 10.0.0.0/8 name private-v4\n".write(toFile: dir + "/policies/20.rules", atomically: true, encoding: .utf8)
        let key = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        try """
            [Interface]
            PrivateKey = \(key)
            Address = 10.42.7.1/24
            StatusListen = 10.42.7.1:80
            ClientDNS = 10.42.7.1
            StateDirectory = \(dir)/state
            RuntimeDirectory = \(dir)/run
            PolicyDirectory = \(dir)/policies
            """.write(toFile: dir + "/tunneld.conf", atomically: true, encoding: .utf8)
        let check = run(["policy", "check", "--config", dir + "/tunneld.conf"])
        #expect(check.code == .ok, "warnings only")
        let lines = check.out.split(separator: "\n").filter { $0.contains("warning:") }
        #expect(lines.count == 3, "\(check.out)")
        #expect(lines.allSatisfy { $0.hasPrefix(dir + "/policies/20.rules:3:1: warning: this rule (block to 10.0.0.0/8 name private-v4) blocks ") })
        #expect(check.out.contains("blocks the status page (StatusListen 10.42.7.1:80) for a new peer (tier free or premium): the page times out; "
            + "to allow it, put 'allow proto tcp to gateway port 80' before it"))
        #expect(check.out.contains("blocks DNS to 10.42.7.1 (ClientDNS)") && check.out.contains("blocks ping to the gateway (10.42.7.1)"))

        try "default allow\nallow proto udp to gateway port 53 name dns\nblock to 10.0.0.0/8\n".write(toFile: dir + "/policies/20.rules", atomically: true, encoding: .utf8)
        let ambiguous = run(["policy", "test", "--policies", dir + "/policies", "udp 10.42.7.9:5000 -> 10.42.7.1:53"])
        #expect(ambiguous.code == .failure && ambiguous.err.contains("is an address of the gateway") && ambiguous.err.contains("--config"), "\(ambiguous.err)")
        let clear = run(["policy", "test", "--policies", dir + "/policies", "udp 10.42.7.9:5000 -> 8.8.8.8:53"])
        #expect(clear.code == .ok, "a public address is not taken for the gateway's: \(clear.err)")
        let unaffected = run(["policy", "test", "--policies", dir + "/policies", "tcp 10.42.7.9:5000 -> 10.42.7.1:443"])
        #expect(unaffected.code == .failure && unaffected.err.isEmpty && unaffected.out.contains("verdict block"), "no gateway rule could decide it")
        let bound = run(["policy", "test", "--config", dir + "/tunneld.conf", "udp 10.42.7.9:5000 -> 10.42.7.1:53"])
        #expect(bound.code == .ok && bound.out.contains("name    dns"), "\(bound.out)\(bound.err)")
        let unboundCheck = run(["policy", "check", dir + "/policies"])
        #expect(unboundCheck.out.contains("note: 'gateway' in the rules stands for no address"))
    }

    /// The [Interface]'s ClientDNS is every client's DNS line (a peer's own replaces it), in
    /// `peer add`, `peer config` and `peer qr`; `peer add --qr` prints the code instead of text.
    @Test func clientDNSGoesIntoClientConfigsAndQR() throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let conf = dir + "/tunneld.conf"
        let r = run(["init", "--config", conf, "--subnet", "10.77.0.0/24", "--subnet6", "off", "--endpoint", "vpn.example.org:51820", "--dns", "10.77.0.1"])
        #expect(r.code == .ok, "\(r.err)")
        let add = run(["peer", "add", "phone", "--keep-client-key", "--config", conf])
        #expect(add.code == .ok, "\(add.err)")
        #expect(add.out.contains("Address = 10.77.0.2/32\nDNS = 10.77.0.1\n"), "\(add.out)")
        #expect(run(["peer", "config", "phone", "--config", conf]).out == add.out)
        let own = run(["peer", "add", "laptop", "--dns", "9.9.9.9", "--config", conf])
        #expect(own.out.contains("DNS = 9.9.9.9\n"))
        // The QR code of `peer add --qr` is the one of `peer qr` for the same text.
        let qr = run(["peer", "add", "tablet", "--qr", "--keep-client-key", "--config", conf])
        #expect(qr.code == .ok && qr.out.contains("█") && !qr.out.contains("[Peer]"), "\(qr.err)")
        let text = run(["peer", "config", "tablet", "--config", conf]).out
        #expect(text.contains("DNS = 10.77.0.1\n"))
        let (modules, width) = try Tunnelctl.qrMatrix(text)
        #expect(qr.out == Tunnelctl.qrBlocks(modules, width, margin: 2))
        #expect(run(["peer", "qr", "tablet", "--config", conf]).out == qr.out)
    }
}
