
/// An address assigned to the tunnel interface together with its prefix length, as written in
/// `Address = 10.99.0.1/24` (unlike `IPPrefix`, the host bits are kept: they are the address).
public struct InterfaceAddress: Hashable, Sendable, CustomStringConvertible {
    /// The interface's own address.
    public var address: IPAddress
    /// The prefix length of the attached subnet (0...32 for IPv4, 0...128 for IPv6).
    public var prefixLength: Int

    /// An address with a prefix length (not checked against the family; `init?(_:)` checks).
    public init(address: IPAddress, prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    /// Parses `ADDR/LEN` or a bare address (host length: /32 or /128). Nil when malformed.
    public init?(_ text: some StringProtocol) {
        if let slash = text.firstIndex(of: "/") {
            let lenText = text[text.index(after: slash)...]
            guard let a = IPAddress(text[..<slash]), !lenText.isEmpty, lenText.count <= 3,
                lenText.allSatisfy({ $0.isASCII && $0.isNumber }), let len = Int(lenText), len <= a.bitWidth
            else { return nil }
            self.init(address: a, prefixLength: len)
        } else {
            guard let a = IPAddress(text) else { return nil }
            self.init(address: a, prefixLength: a.bitWidth)
        }
    }

    /// The attached subnet (host bits cleared).
    public var subnet: IPPrefix { IPPrefix(address, length: prefixLength)! }

    /// `ADDR/LEN`.
    public var description: String { "\(address)/\(prefixLength)" }
}
