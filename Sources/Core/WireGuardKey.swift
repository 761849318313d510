#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A 32-byte WireGuard key: a Curve25519 private or public key, or a preshared key
/// (WireGuard whitepaper §5.4). Config files and `wg` carry it as base64 (44 characters, as
/// `wg genkey` prints it; Foundation's codec); the cross-platform UAPI carries it as 64 lower-case
/// hex digits. The one key text codec of the project.
public struct WireGuardKey: Hashable, Sendable, CustomStringConvertible {
    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// A key from exactly 32 bytes; nil otherwise.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// Parses standard base64 of 32 bytes (`wg genkey` / `wg pubkey` output). Nil when the text is
    /// not base64 or does not decode to exactly 32 bytes.
    public init?(base64 text: some StringProtocol) {
        let s = String(text)
        guard s.utf8.count == 44, let data = Data(base64Encoded: s), data.count == 32 else { return nil }
        self.bytes = [UInt8](data)
    }

    /// Parses 64 hex digits (either case), as used by the UAPI. Nil otherwise.
    public init?(hex text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 {
            guard let hi = WireGuardKey.nibble(utf8[2 * i]), let lo = WireGuardKey.nibble(utf8[2 * i + 1]) else {
                return nil
            }
            out[i] = hi << 4 | lo
        }
        self.bytes = out
    }

    /// Standard base64 (44 characters with one `=`).
    public var base64: String { Data(bytes).base64EncodedString() }

    /// 64 lower-case hex digits.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// True when every byte is zero (the UAPI's "no key").
    public var isZero: Bool { bytes.allSatisfy { $0 == 0 } }

    /// The base64 form (safe to print for public keys only; never log private or preshared keys).
    public var description: String { base64 }

    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
