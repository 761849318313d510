import Core
/// The TCP control bits (RFC 9293 §3.1; ECE/CWR from RFC 3168).
public struct TCPFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let fin = TCPFlags(rawValue: 0x01)
    public static let syn = TCPFlags(rawValue: 0x02)
    public static let rst = TCPFlags(rawValue: 0x04)
    public static let psh = TCPFlags(rawValue: 0x08)
    public static let ack = TCPFlags(rawValue: 0x10)
    public static let urg = TCPFlags(rawValue: 0x20)
    public static let ece = TCPFlags(rawValue: 0x40)
    public static let cwr = TCPFlags(rawValue: 0x80)

    /// tcpdump style: `S`, `S.`, `F.`, `R`, `P.` …
    public var description: String {
        var s = ""
        if contains(.syn) { s += "S" }
        if contains(.fin) { s += "F" }
        if contains(.rst) { s += "R" }
        if contains(.psh) { s += "P" }
        if contains(.urg) { s += "U" }
        if contains(.ece) { s += "E" }
        if contains(.cwr) { s += "W" }
        if contains(.ack) { s += "." }
        return s.isEmpty ? "none" : s
    }
}
