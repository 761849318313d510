import Config
import Core
import Foundation
import Glibc
import Testing
import WireGuard

@testable import tunnelctl

/// `tunnelctl import` (golden output for three real-world wg-quick server files) and `tunnelctl
/// peer add|remove|disable|enable|rename|list|config` against a config file in a temporary
/// directory with no daemon: the edits land in the file, comments kept, and each one says that the
/// file is the change.
@Suite struct PeerCommandTests {
    static let wgquick = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../ControlTests/Golden/wgquick").standardized

    func run(_ argv: [String]) -> (code: ExitCode, out: String, err: String) {
        let c = Console(capturing: true)
        let code = Tunnelctl.run(argv, console: c)
        return (code, c.out, c.err)
    }

    @Test(arguments: ["pivpn", "wg-easy", "hand"])
    func importIsGolden(name: String) throws {
        let path = Self.wgquick.appendingPathComponent("\(name).conf").path
        let r = run(["import", path])
        #expect(r.code == .ok, "\(r.err)")
        let summary = r.err.replacingOccurrences(of: Self.wgquick.path + "/", with: "")
        try HistoryFixture.expectGolden(r.out, "import-\(name).conf")
        try HistoryFixture.expectGolden(summary, "import-\(name).txt")
        // The result parses, with every peer named by its Name line now, and the same peers.
        let before = try TunnelConfig.parse(String(contentsOfFile: path, encoding: .utf8), file: "before")
        let after = try TunnelConfig.parse(r.out, file: "after")
        #expect(after.peers.map(\.name) == before.peers.map(\.name))
        #expect(after.peers.allSatisfy { $0.nameOrigin == .nameKey })
        #expect(after.peers.map(\.publicKey) == before.peers.map(\.publicKey))
    }

    @Test func importWritesOutputOnceWithMode0600() throws {
        let dir = NSTemporaryDirectory() + "import-\(getpid())-\(Int.random(in: 0...999_999))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let src = Self.wgquick.appendingPathComponent("pivpn.conf").path
        let r = run(["import", src, "-o", dir + "/tunneld.conf"])
        #expect(r.code == .ok)
        #expect(r.out.contains("written to \(dir)/tunneld.conf"))
        var st = stat()
        #expect(stat(dir + "/tunneld.conf", &st) == 0 && st.st_mode & 0o777 == 0o600)
        let again = run(["import", src, "-o", dir + "/tunneld.conf"])
        #expect(again.code == .failure && again.err.contains("exists"))
    }

    func fixture() throws -> (dir: String, conf: String) {
        let dir = NSTemporaryDirectory() + "peercmd-\(getpid())-\(Int.random(in: 0...999_999))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let k1 = WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64
        let k2 = WireGuardKey(bytes: [UInt8](repeating: 2, count: 32))!.base64
        let text = """
            # gateway
            [Interface]
            PrivateKey = \(k1)
            Address = 10.99.0.1/24, fd99::1/64
            RuntimeDirectory = \(dir)/run
            StateDirectory = \(dir)/state
            PublicEndpoint = vpn.example.org:51820
            ClientDNS = 10.99.0.1

            ### Client alice
            [Peer]
            PublicKey = \(k2)
            AllowedIPs = 10.99.0.2/32

            """
        try text.write(toFile: dir + "/tunneld.conf", atomically: false, encoding: .utf8)
        chmod(dir + "/tunneld.conf", 0o640)
        return (dir, dir + "/tunneld.conf")
    }

    @Test func addThenConfigThenRemove() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let before = try String(contentsOfFile: f.conf, encoding: .utf8)
        let add = run(["peer", "add", "bob", "--psk", "--keep-client-key", "--tier", "premium", "--config", f.conf])
        #expect(add.code == .ok, "\(add.err)")
        #expect(add.err.contains("tunneld is not running: the configuration file is the change"))
        let after = try String(contentsOfFile: f.conf, encoding: .utf8)
        #expect(after.hasPrefix(before), "the old text is kept byte for byte")
        let config = try TunnelConfig.parse(after, file: "t")
        let bob = try #require(config.peer(named: "bob"))
        #expect(bob.allowedIPs.map(\.description) == ["10.99.0.3/32", "fd99::2/128"])
        #expect(bob.tier == .premium && bob.presharedKey != nil)
        var st = stat()
        #expect(stat(f.conf, &st) == 0 && st.st_mode & 0o777 == 0o640, "mode kept")
        #expect(stat(f.dir + "/clients/bob.key", &st) == 0 && st.st_mode & 0o777 == 0o600)
        // The client config: the printed one at add equals `peer config` (the key was kept).
        let shown = run(["peer", "config", "bob", "--config", f.conf])
        #expect(shown.code == .ok && shown.out == add.out)
        let client = try TunnelConfig.parse(add.out.components(separatedBy: "\n[Peer]")[0], file: "client")
        #expect(client.interface.addresses.map(\.description) == ["10.99.0.3/32", "fd99::2/128"])
        let gatewayPublic = WireGuardKey(bytes: X25519.publicKey(of: [UInt8](repeating: 1, count: 32)))!.base64
        #expect(add.out.contains("PublicKey = \(gatewayPublic)\n"))
        #expect(add.out.contains("Endpoint = vpn.example.org:51820\nAllowedIPs = 0.0.0.0/0, ::/0\nPersistentKeepalive = 25\n"))
        #expect(add.out.contains("DNS = 10.99.0.1\n"))
        // The public key in the file is the private key's.
        let priv = try #require(client.interface.privateKey)
        #expect(X25519.publicKey(of: priv.bytes) == bob.publicKey.bytes)
        // Duplicate name; remove; then the file is the original again.
        #expect(run(["peer", "add", "bob", "--config", f.conf]).code == .failure)
        let rm = run(["peer", "remove", "bob", "--config", f.conf])
        #expect(rm.code == .ok && rm.out.contains("bob: removed"))
        #expect(try String(contentsOfFile: f.conf, encoding: .utf8) == before)
        #expect(!FileManager.default.fileExists(atPath: f.dir + "/clients/bob.key"))
    }

    @Test func clientOptionsAtAddAreStoredForPeerConfig() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let add = run(["peer", "add", "dora", "--keep-client-key", "--dns", "9.9.9.9, lan", "--endpoint", "gw.example.net:443",
                       "--allowed-ips", "10.99.0.0/24,192.168.1.0/24", "--config", f.conf])
        #expect(add.code == .ok, "\(add.err)")
        let dora = try #require(try TunnelConfig.parse(try String(contentsOfFile: f.conf, encoding: .utf8), file: "t").peer(named: "dora"))
        #expect(dora.clientDNS == ["9.9.9.9", "lan"])
        #expect(dora.clientEndpoint?.description == "gw.example.net:443")
        #expect(dora.clientAllowedIPs?.map(\.description) == ["10.99.0.0/24", "192.168.1.0/24"])
        #expect(add.out.contains("DNS = 9.9.9.9, lan\n"))
        #expect(add.out.contains("Endpoint = gw.example.net:443\nAllowedIPs = 10.99.0.0/24, 192.168.1.0/24\n"))
        let shown = run(["peer", "config", "dora", "--config", f.conf])
        #expect(shown.code == .ok && shown.out == add.out, "peer config reproduces what add printed")
        // Without the options: the [Interface] defaults (ClientDNS of [Interface] is the default --dns).
        let plain = run(["peer", "add", "erik", "--config", f.conf])
        #expect(plain.out.contains("DNS = 10.99.0.1\n") && plain.out.contains("Endpoint = vpn.example.org:51820\n"))
    }

    @Test func configWithoutKeptKeySaysSo() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let add = run(["peer", "add", "carol", "--ip", "10.99.0.50", "--config", f.conf])
        #expect(add.code == .ok && add.out.contains("PrivateKey = ") && add.out.contains("Address = 10.99.0.50/32\n"))
        let shown = run(["peer", "config", "carol", "--config", f.conf])
        #expect(shown.code == .ok && shown.out.contains("# PrivateKey = (shown once by 'tunnelctl peer add'; not stored)"))
        #expect(shown.err.contains("not stored"))
    }

    @Test func disableEnableRenameList() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let before = try String(contentsOfFile: f.conf, encoding: .utf8)
        #expect(run(["peer", "disable", "alice", "--config", f.conf]).code == .ok)
        #expect(try TunnelConfig.parse(String(contentsOfFile: f.conf, encoding: .utf8), file: "t").peer(named: "alice")?.disabled == true)
        #expect(run(["peer", "list", "--config", f.conf]).out.contains("disabled"))
        let explain = run(["explain", "alice", "--config", f.conf])
        #expect(explain.code == .ok && explain.out.hasPrefix("alice: refused — disabled in the configuration"))
        #expect(run(["peer", "enable", "alice", "--config", f.conf]).code == .ok)
        #expect(run(["explain", "alice", "--config", f.conf]).code == .failure, "enabled: not refused")
        #expect(try String(contentsOfFile: f.conf, encoding: .utf8) == before)
        #expect(run(["peer", "rename", "alice", "ann", "--config", f.conf]).code == .ok)
        #expect(try String(contentsOfFile: f.conf, encoding: .utf8) == before.replacingOccurrences(of: "AllowedIPs = 10.99.0.2/32\n", with: "AllowedIPs = 10.99.0.2/32\nName = ann\n"))
        #expect(run(["peer", "show", "ann", "--config", f.conf]).out.contains("name: ann\n"))
        #expect(run(["peer", "remove", "zed", "--config", f.conf]).code == .failure)
    }

    @Test func listAndShowJSONAreGolden() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let text = try String(contentsOfFile: f.conf, encoding: .utf8)
        try (text + "Expires = 2027-01-31\nDisabled = true\n").write(toFile: f.conf, atomically: false, encoding: .utf8)
        let list = run(["peer", "list", "--json", "--config", f.conf])
        #expect(list.code == .ok)
        try HistoryFixture.expectGolden(list.out, "peer-list.json")
        let show = run(["peer", "show", "alice", "--json", "--config", f.conf])
        try HistoryFixture.expectGolden(show.out, "peer-show.json")
        // Expired (not disabled): explain says since when.
        try (text + "Expires = 2020-01-31\n").write(toFile: f.conf, atomically: false, encoding: .utf8)
        let e = run(["explain", "alice", "--json", "--config", f.conf])
        #expect(e.code == .ok && e.out.contains("\"reason\" : \"expired\"") && e.out.contains("\"since\" : \"2020-01-31T00:00:00.000Z\""))
        #expect(run(["peer", "list", "--config", f.conf]).out.contains("expired"))
    }

    @Test func addErrors() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let before = try String(contentsOfFile: f.conf, encoding: .utf8)
        #expect(run(["peer", "add", "x", "--ip", "10.99.0.2", "--config", f.conf]).err.contains("already in the AllowedIPs of peer 'alice'"))
        #expect(run(["peer", "add", "x", "--ip", "10.99.0.1", "--config", f.conf]).err.contains("the gateway's own address"))
        #expect(run(["peer", "add", "x", "--expires", "soon", "--config", f.conf]).code == .usage)
        #expect(run(["peer", "add", "x y", "--config", f.conf]).code == .usage)
        let noEndpoint = before.replacingOccurrences(of: "PublicEndpoint = vpn.example.org:51820\n", with: "")
        try noEndpoint.write(toFile: f.conf, atomically: false, encoding: .utf8)
        let r = run(["peer", "add", "x", "--config", f.conf])
        #expect(r.code == .failure && r.err.contains("no PublicEndpoint in [Interface]"))
        #expect(try String(contentsOfFile: f.conf, encoding: .utf8) == noEndpoint, "nothing written")
        #expect(run(["peer", "add", "x", "--endpoint", "203.0.113.1:51820", "--config", f.conf]).code == .ok)
    }

    /// `peer qr --png` decodes (zbarimg, Debian zbar-tools) to exactly the `peer config` text.
    @Test func qrPNGDecodesToTheClientConfig() throws {
        let zbar = "/usr/bin/zbarimg"
        try #require(FileManager.default.isExecutableFile(atPath: zbar), "zbarimg missing: scripts/deps.sh installs zbar-tools")
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        #expect(run(["peer", "add", "bob", "--psk", "--keep-client-key", "--config", f.conf]).code == .ok)
        let config = run(["peer", "config", "bob", "--config", f.conf])
        let qr = run(["peer", "qr", "bob", "--png", f.dir + "/bob.png", "--config", f.conf])
        #expect(qr.code == .ok, "\(qr.err)")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: zbar)
        p.arguments = ["--raw", "-q", f.dir + "/bob.png"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let decoded = String(decoding: data, as: UTF8.self)
        #expect(decoded == config.out + "\n", "zbarimg adds one newline after the data")
        // The terminal form: half blocks, a square of width + 2 * 2 columns.
        let text = run(["peer", "qr", "bob", "--config", f.conf])
        let lines = text.out.split(separator: "\n")
        #expect(text.code == .ok && !lines.isEmpty && lines.allSatisfy { $0.count == lines[0].count })
        #expect(text.out.unicodeScalars.allSatisfy { "█▀▄ \n".unicodeScalars.contains($0) })
    }

    @Test func reloadWithoutDaemonExits3() throws {
        let f = try fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let r = run(["reload", "--config", f.conf])
        #expect(r.code == .daemonNotRunning && r.err.contains("tunneld is not running"))
    }
}
