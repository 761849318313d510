import Core
import Packet

extension TunnelConfig {
    /// Canonical spellings of the `[Interface]` keys (matched case-insensitively, like wg-quick).
    public static let interfaceKeys = [
        "Name", "PrivateKey", "PrivateKeyFile", "ListenPort", "Address", "MTU", "FwMark", "StateDirectory",
        "RuntimeDirectory", "PolicyDirectory", "FreeSession", "FreePause", "WatchdogInterval", "ControlGroup",
    ]
    /// Canonical spellings of the `[Peer]` keys.
    public static let peerKeys = [
        "Name", "PublicKey", "PresharedKey", "AllowedIPs", "Endpoint", "PersistentKeepalive", "Tier",
    ]
    /// wg-quick keys that tunneld deliberately does not run (it configures the interface itself).
    static let wgQuickOnlyKeys = ["DNS", "Table", "PreUp", "PostUp", "PreDown", "PostDown", "SaveConfig"]
    /// Keys that may appear more than once in a section (their lists are concatenated).
    static let repeatableKeys: Set<String> = ["Address", "AllowedIPs"]

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
        var parser = ConfigParser(file: file, baseDirectory: baseDirectory)
        parser.run(text)
        return try parser.finish()
    }
}
