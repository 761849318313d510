/// Bytes a peer used in one window (quota accounting): `up` what it sent, `down` what
/// it received (inner packets as forwarded).
public struct ByteUse: Sendable, Hashable, Codable {
    public var up: UInt64
    public var down: UInt64

    public init(up: UInt64 = 0, down: UInt64 = 0) {
        self.up = up
        self.down = down
    }

    /// Nothing used.
    public static let zero = ByteUse()

    /// Both directions.
    public var total: UInt64 { up &+ down }
}
