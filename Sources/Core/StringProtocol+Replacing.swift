extension StringProtocol {
    /// The text with every occurrence of `target` replaced by `replacement`, left to right, not
    /// overlapping. Compared as UTF-8 bytes (so `\n` inside `\r\n` is found, as Foundation's
    /// `replacingOccurrences` found it); FoundationEssentials, which the binaries link, has no
    /// `replacingOccurrences`.
    public func replacingAll(_ target: String, with replacement: String) -> String {
        let t = Array(target.utf8)
        guard !t.isEmpty else { return String(self) }
        let b = Array(utf8)
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            if b[i] == t[0], i + t.count <= b.count, b[i..<(i + t.count)].elementsEqual(t) {
                out += replacement.utf8
                i += t.count
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
