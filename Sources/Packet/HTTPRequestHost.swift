import Core
/// Finds the `Host` header (RFC 9112 §3.2, RFC 9110 §7.2) of a plain HTTP/1.x request at the
/// start of a TCP payload. Pure and bounded: it looks at most at `maxHeaderBytes` bytes and
/// allocates nothing. The port, if any, is not part of the returned range.
public enum HTTPRequestHost {
    /// How far into the payload the header block is searched.
    public static let maxHeaderBytes = 8192

    /// Looks for the Host header value in `payload`.
    public static func host(in payload: UnsafeRawBufferPointer) -> HostExtraction {
        let n = min(payload.count, maxHeaderBytes)
        // Request line: METHOD SP ... ; methods are upper-case tokens (RFC 9110 §9).
        var i = 0
        while i < n && i < 16 && payload[i] >= 65 && payload[i] <= 90 { i += 1 }
        if i == n { return i == payload.count && i < 16 ? .needMoreData : .notPresent }
        guard i >= 3, payload[i] == UInt8(ascii: " "), isMethod(payload, i) else { return .notPresent }
        // Skip to the end of the request line.
        guard let firstLineEnd = lineEnd(payload, from: i, limit: n) else {
            return payload.count > n ? .malformed : .needMoreData
        }
        var line = firstLineEnd
        while true {
            guard let end = lineEnd(payload, from: line, limit: n) else {
                return payload.count > n ? .malformed : .needMoreData
            }
            let contentEnd = end - (end - 2 >= line && payload[end - 2] == 13 ? 2 : 1)
            if contentEnd == line { return .notPresent }  // empty line: end of headers
            if contentEnd - line >= 5 && matchesHost(payload, line) {
                var s = line + 5
                var e = contentEnd
                while s < e && (payload[s] == 32 || payload[s] == 9) { s += 1 }
                while e > s && (payload[e - 1] == 32 || payload[e - 1] == 9) { e -= 1 }
                // Drop a port: the last ':' after any ']'.
                var colon = e
                var k = e
                while k > s {
                    k -= 1
                    if payload[k] == UInt8(ascii: "]") { break }
                    if payload[k] == UInt8(ascii: ":") { colon = k; break }
                }
                if colon < e {
                    for d in (colon + 1)..<e where !(payload[d] >= 48 && payload[d] <= 57) { return .malformed }
                    e = colon
                }
                let bytes = UnsafeRawBufferPointer(rebasing: payload[s..<e])
                return HostExtraction.isValidHostName(bytes) ? .found(s..<e) : .malformed
            }
            line = end
        }
    }

    /// Index after the next LF at or after `from`, or nil when none before `limit`.
    static func lineEnd(_ p: UnsafeRawBufferPointer, from: Int, limit: Int) -> Int? {
        var i = from
        while i < limit {
            if p[i] == 10 { return i + 1 }
            i += 1
        }
        return nil
    }

    /// `Host:` at `i`, case-insensitively.
    static func matchesHost(_ p: UnsafeRawBufferPointer, _ i: Int) -> Bool {
        (p[i] | 0x20) == UInt8(ascii: "h") && (p[i + 1] | 0x20) == UInt8(ascii: "o") && (p[i + 2] | 0x20) == UInt8(ascii: "s")
            && (p[i + 3] | 0x20) == UInt8(ascii: "t") && p[i + 4] == UInt8(ascii: ":")
    }

    /// The registered methods of RFC 9110 §9 plus PATCH (RFC 5789).
    static func isMethod(_ p: UnsafeRawBufferPointer, _ length: Int) -> Bool {
        func equals(_ word: StaticString) -> Bool {
            guard word.utf8CodeUnitCount == length else { return false }
            let w = word.utf8Start
            for k in 0..<length where p[k] != w[k] { return false }
            return true
        }
        return equals("GET") || equals("POST") || equals("HEAD") || equals("PUT") || equals("DELETE")
            || equals("OPTIONS") || equals("PATCH") || equals("CONNECT") || equals("TRACE")
    }
}
