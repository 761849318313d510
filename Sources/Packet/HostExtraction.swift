import Core
/// The outcome of looking for a host name in the first payload bytes of a flow.
public enum HostExtraction: Equatable, Sendable {
    /// The host name is at these byte offsets of the payload (ASCII, as sent: compare
    /// case-insensitively, or use `HostExtraction.lowercasedHost`).
    case found(Range<Int>)
    /// The payload is of the kind (TLS handshake / HTTP request) but ends before the name or
    /// the end of the headers: wait for more data (bounded by the caller).
    case needMoreData
    /// The payload is not of this kind, or is complete and names no host.
    case notPresent
    /// The payload is of the kind but its structure is broken, or the name is not a valid
    /// host name.
    case malformed

    /// The host name of `.found` in `payload`, lower-cased (allocates a String: call once per
    /// flow, not per packet); nil otherwise.
    public func lowercasedHost(in payload: UnsafeRawBufferPointer) -> String? {
        guard case .found(let r) = self, r.lowerBound >= 0, r.upperBound <= payload.count else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: payload[r]).map { $0 | ($0 >= 65 && $0 <= 90 ? 0x20 : 0) },
                      as: UTF8.self)
    }

    /// True when `bytes` is a plausible DNS host name: 1...253 bytes of letters, digits, `-`,
    /// `_` and `.`, no empty label, labels ≤ 63 bytes (RFC 1035 §2.3.4, with `_` tolerated as
    /// seen in practice). An IPv6 literal in brackets is accepted for HTTP Host.
    static func isValidHostName(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let n = bytes.count
        guard n >= 1 && n <= 253 else { return false }
        if bytes[0] == UInt8(ascii: "[") {
            guard n >= 3, bytes[n - 1] == UInt8(ascii: "]") else { return false }
            for i in 1..<(n - 1) {
                let c = bytes[i]
                guard IPAddress.hexValue(c) != nil || c == UInt8(ascii: ":") || c == UInt8(ascii: ".") else { return false }
            }
            return true
        }
        var label = 0
        for c in bytes {
            if c == UInt8(ascii: ".") {
                guard label > 0 else { return false }
                label = 0
                continue
            }
            let ok = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c == UInt8(ascii: "-")
                || c == UInt8(ascii: "_")
            guard ok else { return false }
            label += 1
            guard label <= 63 else { return false }
        }
        return true
    }
}
