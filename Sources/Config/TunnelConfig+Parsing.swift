import Core
import Packet

extension TunnelConfig {
    /// Canonical spellings of the `[Interface]` keys (matched case-insensitively, like wg-quick).
    public static let interfaceKeys = [
        "Name", "PrivateKey", "PrivateKeyFile", "ListenPort", "Address", "MTU", "FwMark", "StateDirectory",
        "RuntimeDirectory", "PolicyDirectory", "FreeSession", "FreePause", "WatchdogInterval", "ControlGroup",
        "PublicEndpoint", "DefaultTier", "QUIC", "HostWait", "DNSTTLFloor", "DNSTTLCeiling", "MetricsListen", "StatusListen", "ClientDNS", "Store", "StorePassFile", "GatewayName", "DNS", "SaveConfig", "Table", "PreUp", "PostUp", "PreDown", "PostDown",
    ]
    /// Canonical spellings of the `[Peer]` keys.
    public static let peerKeys = [
        "Name", "PublicKey", "PresharedKey", "AllowedIPs", "Endpoint", "PersistentKeepalive", "Tier", "Expires", "Disabled",
        "ClientDNS", "ClientEndpoint", "ClientAllowedIPs",
    ]
    /// The `[Interface]` keys that come from wg-quick (accepted for compatibility).
    public static let wgQuickKeys = ["DNS", "SaveConfig", "Table", "PreUp", "PostUp", "PreDown", "PostDown"]
    /// Keys that may appear more than once in a section (their lists are concatenated).
    static let repeatableKeys: Set<String> = ["Address", "AllowedIPs", "DNS", "PreUp", "PostUp", "PreDown", "PostDown"]

    /// True for a valid peer name: 1–32 characters of `[A-Za-z0-9_.-]`.
    public static func isValidPeerName(_ name: String) -> Bool { ConfigParser.isValidPeerName(name) }

    /// Parses the text of a config file. Pure: a `PrivateKeyFile` is only recorded (with its path
    /// resolved against `baseDirectory`), not read — `load(path:)` reads it. Relative directory
    /// paths are resolved against `baseDirectory` too (when given).
    ///
    /// - Parameters:
    ///   - text: the file's contents.
    ///   - file: the name to use in error messages.
    ///   - baseDirectory: directory of the config file, for relative paths; nil keeps them as written.
    /// - Throws: `ConfigErrors` with every error found, in line order.
    public static func parse(_ text: String, file: String, baseDirectory: String? = nil) throws(ConfigErrors) -> TunnelConfig {
        if let line = binaryLine(text) {
            throw ConfigErrors([ConfigError(file: file, line: 0, key: nil, message: "contains binary data at line \(line)",
                                            hint: "is this the right file?")])
        }
        var parser = ConfigParser(file: file, baseDirectory: baseDirectory)
        parser.run(text)
        return try parser.finish()
    }

    /// Parses the bytes of a config file (what `load(path:)` and `tunnelctl` read): text that is
    /// not UTF-8, or holds control characters other than tab, CR and LF, is refused with one
    /// error instead of one per garbage line (and its bytes are never echoed).
    public static func parse(contents: [UInt8], file: String, baseDirectory: String? = nil) throws(ConfigErrors) -> TunnelConfig {
        guard let text = String(validating: contents, as: UTF8.self) else {
            var line = 1  // of the first invalid byte
            var bytes = contents.makeIterator()
            var decoder = UTF8()
            scan: while true {
                switch decoder.decode(&bytes) {
                case .scalarValue(let v): if v == "\n" { line += 1 }
                case .emptyInput, .error: break scan
                }
            }
            throw ConfigErrors([ConfigError(file: file, line: 0, key: nil, message: "not UTF-8 text (first invalid byte on line \(line))",
                                            hint: "is this the right file?")])
        }
        return try parse(text, file: file, baseDirectory: baseDirectory)
    }

    /// The 1-based line of the first control character other than tab, CR and LF (NUL, ESC, C1
    /// controls, DEL …), nil when there is none.
    static func binaryLine(_ text: String) -> Int? {
        var line = 1
        for u in text.unicodeScalars {
            if u == "\n" { line += 1; continue }
            if u == "\t" || u == "\r" { continue }
            if u.properties.generalCategory == .control { return line }
        }
        return nil
    }
}
