import Glibc

extension Sys {
    /// `value` with `digits` digits after the point, rounded as C's `printf("%.*f")` rounds (the
    /// exact binary value, ties to even): what `String(format: "%.1f", …)` printed, without
    /// Foundation's formatter.
    public static func fixed(_ value: Double, digits: Int) -> String {
        var buf = [CChar](repeating: 0, count: 512)
        let n = withVaList([Int32(clamping: digits), value]) { vsnprintf(&buf, buf.count, "%.*f", $0) }
        guard n >= 0, Int(n) < buf.count else { return "\(value)" }
        return String(decoding: buf[0..<Int(n)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
