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

    /// `ClientDNS`: what wg-quick's `DNS` takes — resolver addresses and search domains, comma
    /// separated (no ports: wg-quick hands them to resolvconf as they are).
    static func dnsList(_ text: String) -> Result<[String], ValueError> {
        var out: [String] = []
        for item in list(text) {
            if IPAddress(item) != nil {
                out.append(item)
                continue
            }
            let isDomain = !item.isEmpty && item.utf8.count <= 253 && !item.hasPrefix(".") && !item.hasPrefix("-")
                && item.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }
                && item.contains(where: \.isLetter)
            guard isDomain else {
                return .failure(ValueError("'\(item)' is neither a resolver address nor a search domain",
                                           hint: "write addresses (and search domains) as wg-quick's DNS takes them, e.g. 10.99.0.1 or 10.99.0.1, lan"))
            }
            out.append(item)
        }
        return .success(out)
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
