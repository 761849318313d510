import Core
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Packet

/// Parsers for config values. Each returns the value or a message saying what is wrong and a hint
/// saying what to write instead.
enum ConfigValue {
    /// A UDP port 1...65535.
    static func port(_ text: String) -> Result<UInt16, ValueError> {
        guard let p = HostPort.parsePort(text), p != 0 else {
            return .failure(ValueError("'\(text)' is not a port", hint: "use a number from 1 to 65535"))
        }
        return .success(p)
    }

    /// A base64 WireGuard key.
    static func key(_ text: String, what: String) -> Result<WireGuardKey, ValueError> {
        guard let k = WireGuardKey(base64: text) else {
            return .failure(ValueError(
                "'\(abbreviate(text))' is not a key (base64 of 32 bytes, 44 characters)",
                hint: "generate one with `wg \(what)`"))
        }
        return .success(k)
    }

    /// Comma-separated list items, trimmed; empty items are reported.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmedSpaces() }
    }

    /// `true`/`false` (also `yes`/`no`, `on`/`off`, any case); nil otherwise.
    static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: return nil
        }
    }

    /// UTC, the zone of dates in the config file.
    static let utc = Zone.utc

    /// At most 20 characters of `text`, with an ellipsis (keys are secrets: don't echo them whole).
    static func abbreviate(_ text: String) -> String {
        text.count <= 20 ? text : String(text.prefix(8)) + "…"
    }
}
