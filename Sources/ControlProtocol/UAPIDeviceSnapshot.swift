import Core
/// The device as the UAPI `get=1` operation reports it.
public struct UAPIDeviceSnapshot: Hashable, Sendable {
    /// The interface's private key (omitted from the output when nil or zero).
    public var privateKey: WireGuardKey?
    /// UDP listen port (omitted when 0).
    public var listenPort: UInt16
    /// Firewall mark (omitted when 0).
    public var fwmark: UInt32
    /// The peers.
    public var peers: [UAPIPeerSnapshot]

    /// A device snapshot from its fields.
    public init(privateKey: WireGuardKey? = nil, listenPort: UInt16 = 0, fwmark: UInt32 = 0, peers: [UAPIPeerSnapshot] = []) {
        self.privateKey = privateKey
        self.listenPort = listenPort
        self.fwmark = fwmark
        self.peers = peers
    }
}
