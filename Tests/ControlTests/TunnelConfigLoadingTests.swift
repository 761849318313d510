import Core
import Foundation
import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

@Suite struct TunnelConfigLoadingTests {
    func config(keyFile: String) -> String {
        "[Interface]\nPrivateKeyFile = \(keyFile)\nAddress = 10.99.0.1/24\nStateDirectory = state\n"
    }

    @Test func readsAPrivateKeyFileRelativeToTheConfig() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/private.key", key(9).base64 + "\n", mode: 0o600)
        writeFile(dir + "/tunneld.conf", config(keyFile: "private.key"), mode: 0o644)
        let c = try TunnelConfig.load(path: dir + "/tunneld.conf")
        #expect(c.interface.privateKey == key(9))
        #expect(c.interface.privateKeySource == .file(dir + "/private.key"))
        #expect(c.interface.stateDirectory == dir + "/state")
    }

    @Test(arguments: [0o640, 0o604, 0o644, 0o660, 0o601] as [mode_t])
    func refusesAKeyFileOthersCanAccess(mode: mode_t) throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/private.key", key(9).base64 + "\n", mode: mode)
        writeFile(dir + "/tunneld.conf", config(keyFile: "private.key"))
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: dir + "/tunneld.conf") }
        let octal = String(mode, radix: 8)
        #expect(e?.description == "\(dir)/tunneld.conf:2: PrivateKeyFile: '\(dir)/private.key' has mode 0\(octal), so group or others can access the private key; run: chmod 600 \(dir)/private.key")
    }

    /// An inline PrivateKey in a file all users can read is a warning naming the line (wg-quick
    /// warns too); mode 0600 or 0640 is not.
    @Test(arguments: [(0o644, true), (0o604, true), (0o600, false), (0o640, false)] as [(mode_t, Bool)])
    func warnsAboutAnInlineKeyInAFileAllCanRead(mode: mode_t, warns: Bool) throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/tunneld.conf", "[Interface]\nAddress = 10.99.0.1/24\nPrivateKey = \(key(9).base64)\n", mode: mode)
        let c = try TunnelConfig.load(path: dir + "/tunneld.conf")
        let w = c.warnings.filter { $0.key == "PrivateKey" }
        #expect(w.count == (warns ? 1 : 0))
        if warns {
            #expect(w[0].description == "\(dir)/tunneld.conf:3: PrivateKey: the file holds the private key and is accessible to all users (mode \(String(mode, radix: 8))); chmod 600 \(dir)/tunneld.conf, or move the key to a PrivateKeyFile of mode 0600")
        }
    }

    /// Binary garbage is one error naming the file, never line after line of its raw bytes.
    @Test func binaryFilesAreOneErrorWithoutRawBytes() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        let path = dir + "/tunneld.conf"
        // Not UTF-8 (an ELF-like header, 0xFF bytes), on line 3.
        var garbage = Array("[Interface]\nAddress = 10.99.0.1/24\n".utf8) + [0x7F, 0x45, 0x4C, 0x46, 0x02, 0xFF, 0xFE, 0x0A]
        for i in 0..<200 { garbage.append(UInt8(truncatingIfNeeded: i &* 37)); if i % 17 == 0 { garbage.append(0x0A) } }
        _ = FileManager.default.createFile(atPath: path, contents: Data(garbage))
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: path) }
        #expect(e?.description == "\(path): not UTF-8 text (first invalid byte on line 3); is this the right file?")

        // Valid UTF-8 but control bytes (NUL, ESC): "binary data", once, with its line.
        writeFile(path, "[Interface]\n\u{1B}[31mred\u{00}\u{00}\nmore\u{07} = x\n")
        let b = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: path) }
        #expect(b?.errors.count == 1)
        #expect(b?.description == "\(path): contains binary data at line 2; is this the right file?")
        let p = #expect(throws: ConfigErrors.self) { try TunnelConfig.parse("x\u{0}y = 1\n", file: "t.conf") }
        #expect(p?.description == "t.conf: contains binary data at line 1; is this the right file?")
    }

    /// Values echoed in errors are escaped: no bidi override or zero-width character reaches the terminal.
    @Test func echoedValuesAreEscaped() throws {
        let e = #expect(throws: ConfigErrors.self) {
            try TunnelConfig.parse("[Interface]\nName = tv\u{202E}0\u{200B}\nListenPort = 1\u{2028}2\n", file: "t.conf")
        }
        let text = e?.description ?? ""
        #expect(text.contains(#"Name: 'tv\u{202E}0\u{200B}' is not an interface name"#), "\(text)")
        #expect(!text.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x200B || $0.value == 0x2028 })
        #expect(ConfigError.printable("a\tb\u{1B}c\u{85}d é") == #"a\tb\x1Bc\x85d é"#)
    }

    @Test func tunnelctlCanLoadWithoutTheKey() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/private.key", key(9).base64, mode: 0o644)
        writeFile(dir + "/tunneld.conf", config(keyFile: "private.key") + "RuntimeDirectory = run\n")
        let c = try TunnelConfig.load(path: dir + "/tunneld.conf", readingPrivateKey: false)
        #expect(c.interface.privateKey == nil)
        #expect(c.interface.controlSocketPath == dir + "/run/control.sock")
    }

    @Test func acceptsMode0400() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/private.key", key(9).base64, mode: 0o400)
        writeFile(dir + "/tunneld.conf", config(keyFile: dir + "/private.key"))
        #expect(try TunnelConfig.load(path: dir + "/tunneld.conf").interface.privateKey == key(9))
    }

    @Test func missingKeyFile() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/tunneld.conf", config(keyFile: "nope.key"))
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: dir + "/tunneld.conf") }
        #expect(e?.description == "\(dir)/tunneld.conf:2: PrivateKeyFile: cannot read '\(dir)/nope.key': No such file or directory; create it with: umask 077; wg genkey > \(dir)/nope.key")
    }

    @Test func keyFileThatIsADirectory() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        mkdir(dir + "/k", 0o700)
        writeFile(dir + "/tunneld.conf", config(keyFile: "k"))
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: dir + "/tunneld.conf") }
        #expect(e?.description == "\(dir)/tunneld.conf:2: PrivateKeyFile: '\(dir)/k' is not a regular file; point it at the file `wg genkey` wrote")
    }

    @Test func keyFileWithoutAKey() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/private.key", "hello\n", mode: 0o600)
        writeFile(dir + "/tunneld.conf", config(keyFile: "private.key"))
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: dir + "/tunneld.conf") }
        #expect(e?.description == "\(dir)/tunneld.conf:2: PrivateKeyFile: '\(dir)/private.key' does not hold a key (base64 of 32 bytes); write one with: umask 077; wg genkey > \(dir)/private.key")
    }

    @Test func missingConfigFile() {
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: "/nonexistent/tunneld.conf") }
        #expect(e?.description == "/nonexistent/tunneld.conf: cannot read: No such file or directory; check the path (--config PATH)")
    }

    @Test func parseErrorsNameTheLoadedPath() throws {
        let (dir, cleanup) = makeTempDirectory()
        defer { cleanup() }
        writeFile(dir + "/tunneld.conf", "[Interface]\nListenPort = 5182o\n")
        let e = #expect(throws: ConfigErrors.self) { try TunnelConfig.load(path: dir + "/tunneld.conf") }
        #expect(e?.errors.first?.description == "\(dir)/tunneld.conf:1: PrivateKey: missing in [Interface]; add PrivateKey = $(wg genkey) or PrivateKeyFile = PATH")
        #expect(e?.errors.last?.description == "\(dir)/tunneld.conf:2: ListenPort: '5182o' is not a port; use a number from 1 to 65535")
    }

    /// The example configuration (examples/) must stay valid (its key file is not read by `parse`).
    @Test func shippedExampleParses() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("examples/tunneld.conf").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let c = try TunnelConfig.parse(text, file: "examples/tunneld.conf", baseDirectory: "/etc/tunnelvision")
        #expect(c.interface.publicEndpoint != nil && c.interface.statusListen != nil && c.interface.metricsListen != nil)
        #expect(c.interface.clientDNS == ["10.99.0.1"])
        #expect(c.interface.name == "tv0")
        #expect(c.interface.privateKeySource == .file("/etc/tunnelvision/private.key"))
        #expect(c.peers.count >= 2)
        #expect(Set(c.peers.map(\.tier)) == [.free, .premium])
        #expect(c.warnings.isEmpty, "\(c.warnings)")
    }
}

@Suite struct ConfigTruncationTests {
    /// Every prefix of a full config parses or fails with errors; none crashes, and every error
    /// names a line inside the text.
    @Test func everyTruncationIsHandled() {
        let full = minimalPeer + "PresharedKey = \(k3)\nAllowedIPs = 10.99.0.2/32, fd99::2/128\nEndpoint = [2001:db8::5]:51820\nPersistentKeepalive = 25\nTier = premium\n"
        let chars = Array(full)
        for n in 0...chars.count {
            let text = String(chars[0..<n])
            let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count
            do {
                _ = try TunnelConfig.parse(text, file: "t")
            } catch {
                #expect(!error.errors.isEmpty)
                for e in error.errors { #expect(e.line <= lines) }
            }
        }
    }
}
