import Core
/// What a ring record reports. Unknown values read from a newer producer are kept, not rejected.
public struct LiveEventKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// One packet passed through the data path (allowed or not).
    public static let packet = LiveEventKind(rawValue: 0)
    /// A flow entered the flow table.
    public static let flowOpen = LiveEventKind(rawValue: 1)
    /// A flow left the flow table (`detail`/`detail2`: total bytes / packets).
    public static let flowClose = LiveEventKind(rawValue: 2)
    /// A peer was refused (session limit, pause); `detail` carries the refusal reason code.
    public static let refusal = LiveEventKind(rawValue: 3)
    /// A peer completed a WireGuard handshake.
    public static let handshake = LiveEventKind(rawValue: 4)
    /// A flow's host became known (SNI, HTTP Host, QUIC SNI or its DNS name): `LiveRecord.hostName`,
    /// `verdict` the flow's. Sent once per flow, when its verdict is decided with a host.
    public static let flowHost = LiveEventKind(rawValue: 5)

    public var description: String {
        switch self {
        case .packet: "packet"
        case .flowOpen: "flow-open"
        case .flowClose: "flow-close"
        case .refusal: "refusal"
        case .handshake: "handshake"
        case .flowHost: "flow-host"
        default: "kind-\(rawValue)"
        }
    }
}
