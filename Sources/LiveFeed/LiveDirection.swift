/// Which way a packet travelled through the gateway.
public struct LiveDirection: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// From a WireGuard peer towards the LAN / Internet (decrypted, written to TUN).
    public static let fromPeer = LiveDirection(rawValue: 0)
    /// From the LAN / Internet towards a peer (read from TUN, encrypted).
    public static let toPeer = LiveDirection(rawValue: 1)

    public var description: String {
        switch self {
        case .fromPeer: "in"
        case .toPeer: "out"
        default: "direction-\(rawValue)"
        }
    }
}
