import Core
/// The QUIC versions whose Initial packets we can read: v1 (RFC 9000/9001) and v2 (RFC 9369).
/// Each has its own Initial salt, HKDF labels and long-header type bits.
public enum QUICVersion: UInt32, Sendable, CaseIterable {
    case v1 = 0x0000_0001
    case v2 = 0x6B33_43CF

    /// RFC 9001 §5.2 / RFC 9369 §3.3.1.
    var initialSalt: [UInt8] {
        switch self {
        case .v1: return [0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a]
        case .v2: return [0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9]
        }
    }

    /// The long-header packet type of an Initial (RFC 9000 §17.2: 0b00; RFC 9369 §3.2: 0b01).
    var initialType: UInt8 { self == .v1 ? 0 : 1 }

    /// HKDF-Expand-Label labels for the packet key, IV and header-protection key
    /// (RFC 9001 §5.1, RFC 9369 §3.3.2).
    var labels: (key: StaticString, iv: StaticString, hp: StaticString) {
        self == .v1 ? ("quic key", "quic iv", "quic hp") : ("quicv2 key", "quicv2 iv", "quicv2 hp")
    }
}
