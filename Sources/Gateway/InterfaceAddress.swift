import Packet

/// An address assigned to an interface with its subnet length, e.g. `10.99.0.1/24` — unlike
/// `IPPrefix`, the host bits are kept (they are the point).
public struct InterfaceAddress: Hashable, Sendable, CustomStringConvertible {
    /// The interface's own address.
    public var address: IPAddress
    /// Length of the on-link subnet (0...32 for IPv4, 0...128 for IPv6).
    public var prefixLength: Int

    /// An address with a subnet length; nil when the length does not fit the family.
    public init?(_ address: IPAddress, prefixLength: Int) {
        guard prefixLength >= 0 && prefixLength <= address.bitWidth else { return nil }
        self.address = address
        self.prefixLength = prefixLength
    }

    /// Parses `10.99.0.1/24`, `fd99::1/64`, or a bare address (a host address: /32 or /128).
    public init?(_ text: some StringProtocol) {
        if let slash = text.firstIndex(of: "/") {
            let lengthText = text[text.index(after: slash)...]
            guard let a = IPAddress(text[..<slash]), !lengthText.isEmpty, lengthText.count <= 3,
                lengthText.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(lengthText)
            else { return nil }
            self.init(a, prefixLength: n)
        } else {
            guard let a = IPAddress(text) else { return nil }
            self.init(a, prefixLength: a.bitWidth)
        }
    }

    /// The on-link subnet (`10.99.0.0/24` for `10.99.0.1/24`), which the kernel routes by itself.
    public var subnet: IPPrefix { IPPrefix(address, length: prefixLength)! }

    public var description: String { "\(address)/\(prefixLength)" }
}
