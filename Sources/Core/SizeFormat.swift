/// The one parser and formatter of byte sizes (`retention set pcap-bytes=2GiB`, CLI options).
/// Decimal units (kB MB GB TB) are powers of 1000, binary ones (KiB MiB GiB TiB, and bare K M G)
/// of 1024; a bare number is bytes. Where a setting allows "no limit", `unlimited` parses to nil.
public enum SizeFormat {
    static let units: [(suffix: String, bytes: Int64)] = [
        ("b", 1), ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("tb", 1_000_000_000_000),
        ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("tib", 1 << 40), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30),
    ]

    /// Bytes for `text` (`2GiB`, `500MB`, `1.5GiB`, `4096`); nil for `unlimited` / `none` when
    /// `allowUnlimited`.
    public static func parse(_ text: some StringProtocol, allowUnlimited: Bool = true) throws(ValueError) -> Int64? {
        let t = String(text).trimmedSpaces().lowercased()
        if t == "unlimited" || t == "forever" || t == "none" {
            guard allowUnlimited else { throw ValueError("'\(text)' is not allowed here", hint: "write a size such as 500MB or 2GiB") }
            return nil
        }
        let hint = "write a size like 500MB, 2GiB, 1048576 (units B kB MB GB TB KiB MiB GiB TiB)" + (allowUnlimited ? " or unlimited" : "")
        let number = t.prefix(while: { ($0.isASCII && $0.isNumber) || $0 == "." })
        let unit = String(t.dropFirst(number.count)).trimmedSpaces()
        guard !number.isEmpty, let value = Double(number) else { throw ValueError("'\(text)' is not a size", hint: hint) }
        let multiplier: Int64
        if unit.isEmpty {
            multiplier = 1
        } else if let u = units.first(where: { $0.suffix == unit }) {
            multiplier = u.bytes
        } else {
            throw ValueError("unknown unit '\(unit)' in '\(text)'", hint: hint)
        }
        let bytes = value * Double(multiplier)
        guard bytes >= 1, bytes < 9.0e18 else { throw ValueError("'\(text)' must be between 1 byte and 8 EiB", hint: allowUnlimited ? "or write unlimited" : nil) }
        guard bytes == bytes.rounded(.down) else { throw ValueError("'\(text)' is not a whole number of bytes") }
        return Int64(bytes)
    }

    /// The shortest exact text for `bytes` that `parse` reads back (`2GiB`, `500MB`, `123B`);
    /// `unlimited` for nil.
    public static func format(bytes: Int64?) -> String {
        guard let bytes else { return "unlimited" }
        var best = (text: "\(bytes)B", value: bytes)
        for (suffix, unit) in [("TiB", Int64(1) << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10),
                               ("TB", 1_000_000_000_000), ("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1000)]
        where bytes >= unit && bytes % unit == 0 && bytes / unit < best.value {
            best = ("\(bytes / unit)\(suffix)", bytes / unit)
        }
        return best.text
    }

    /// An amount as people read it, one decimal: `512 B`, `1.5 KiB`, `2.0 GiB`.
    public static func approximate(bytes n: UInt64) -> String {
        let names = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n)
        var u = 0
        while v >= 1024 && u < names.count - 1 { v /= 1024; u += 1 }
        guard u > 0 else { return "\(n) B" }
        let tenths = Int((v * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(names[u])"
    }
}
