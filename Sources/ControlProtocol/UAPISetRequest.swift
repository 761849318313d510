import Core
/// A parsed `set=1` operation: device changes, then per-peer changes in order.
public struct UAPISetRequest: Hashable, Sendable {
    /// `private_key=`: new private key (all zeros = remove the key).
    public var privateKey: WireGuardKey?
    /// `listen_port=`: new UDP port (0 = pick any).
    public var listenPort: UInt16?
    /// `fwmark=`: new mark (0 = none).
    public var fwmark: UInt32?
    /// `replace_peers=true`: remove every peer before applying `peers`.
    public var replacePeers: Bool = false
    /// Per-peer changes, in the order given.
    public var peers: [UAPIPeerUpdate] = []

    /// An empty request (changes nothing).
    public init() {}
}
