// Minimal standard base64 for key text (no Foundation in the core).

/// Standard base64 (RFC 4648 §4, with padding) for 32-byte keys in configuration and logs.
public enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes bytes as padded base64 text.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            var v = UInt32(bytes[i]) << 16
            if n > 1 { v |= UInt32(bytes[i + 1]) << 8 }
            if n > 2 { v |= UInt32(bytes[i + 2]) }
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(n > 1 ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "="))
            out.append(n > 2 ? alphabet[Int(v & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded base64 text; nil on any character outside the alphabet or a bad length.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            var v: UInt32 = 0
            var pad = 0
            for j in 0..<4 {
                let c = chars[i + j]
                if c == UInt8(ascii: "=") {
                    guard i + 4 == chars.count, j >= 2 else { return nil }
                    pad += 1
                    v <<= 6
                    continue
                }
                guard pad == 0, let idx = alphabet.firstIndex(of: c) else { return nil }
                v = v << 6 | UInt32(idx)
            }
            out.append(UInt8(v >> 16 & 0xff))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xff)) }
            if pad < 1 { out.append(UInt8(v & 0xff)) }
            i += 4
        }
        return out
    }
}
