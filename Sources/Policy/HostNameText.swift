import CIDN2
import Core
/// The one text form of a host name in rules, host lists and FLOW: ASCII lower case without a
/// trailing dot, international names converted to their punycode form (IDNA2008 with UTS #46
/// non-transitional mapping, RFC 5891/3492) by GNU libidn2 — the form a ClientHello's SNI, an
/// HTTP Host header and DNS answers carry, so `bücher.de` in a rule matches `xn--bcher-kva.de`
/// on the wire.
enum HostNameText {
    /// `name` in its rule form, or a sentence saying why it is not a host name.
    static func ascii(_ name: Substring) -> Result<String, HostNameError> {
        var s = name
        if s.hasSuffix(".") { s = s.dropLast() }
        let isASCII = s.utf8.allSatisfy { $0 < 0x80 }
        let converted: String
        if isASCII {
            converted = String(decoding: s.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        } else {
            var out: UnsafeMutablePointer<CChar>?
            let flags = Int32(IDN2_NONTRANSITIONAL.rawValue | IDN2_NFC_INPUT.rawValue)
            let rc = String(s).withCString { idn2_to_ascii_8z($0, &out, flags) }
            guard rc == IDN2_OK.rawValue, let out else {
                let reason = String(cString: idn2_strerror(rc))
                return .failure(HostNameError(message: "'\(name)' is not a valid international host name (libidn2: \(reason.lowercasedFirst))"))
            }
            converted = String(cString: out)
            idn2_free(out)
        }
        guard isPlainHostName(converted) else {
            return .failure(HostNameError(message: "'\(name)' is not a host name (letters, digits, '-', '_' in dot-separated labels of at most 63 bytes, 253 in all)"))
        }
        return .success(converted)
    }

    /// 1...253 bytes of labels of 1...63 lower-case letters, digits, `-` and `_`.
    static func isPlainHostName(_ s: String) -> Bool {
        let b = s.utf8
        guard !b.isEmpty && b.count <= 253 else { return false }
        var label = 0
        for c in b {
            if c == UInt8(ascii: ".") {
                guard label > 0 else { return false }
                label = 0
                continue
            }
            guard (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x5F else { return false }
            label += 1
            guard label <= 63 else { return false }
        }
        return label > 0
    }
}

/// Why a text is not a host name (one sentence).
struct HostNameError: Error {
    var message: String
}

extension String {
    fileprivate var lowercasedFirst: String { prefix(1).lowercased() + dropFirst() }
}
