/// The status page's counters in `status` (`StatusListen`; docs/limits.md "Status page").
public struct StatusPageCounters: Hashable, Sendable, Codable {
    /// The address it listens on (`10.99.0.1`).
    public var address: String
    /// The TCP port (`80`).
    public var port: UInt16
    /// Requests answered, all of them (pages, 403, 404, 405).
    public var requests: UInt64
    /// Requests refused 403: from an address that belongs to no peer.
    public var refused: UInt64
    /// Counters from their fields.
    public init(address: String, port: UInt16, requests: UInt64, refused: UInt64) {
        self.address = address
        self.port = port
        self.requests = requests
        self.refused = refused
    }
}
