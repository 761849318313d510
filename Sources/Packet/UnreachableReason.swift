import Core
/// Which "destination unreachable" an ICMP reply states, mapped to both ICMP versions.
///
/// TunnelVision answers a `reject` of UDP with `portUnreachable` (what `iptables -j REJECT` does
/// by default: the client's socket sees ECONNREFUSED at once) and of other non-TCP protocols
/// with `administrativelyProhibited` (EHOSTUNREACH / "communication administratively
/// prohibited" in ping). TCP is answered with a RST instead.
public enum UnreachableReason: Sendable, Equatable {
    /// ICMPv4 type 3 code 3 (RFC 792) / ICMPv6 type 1 code 4 (RFC 4443 §3.1).
    case portUnreachable
    /// ICMPv4 type 3 code 13 (RFC 1812 §5.2.7.1) / ICMPv6 type 1 code 1 (RFC 4443 §3.1).
    case administrativelyProhibited

    /// The ICMPv4 code.
    public var v4Code: UInt8 { self == .portUnreachable ? 3 : 13 }
    /// The ICMPv6 code.
    public var v6Code: UInt8 { self == .portUnreachable ? 4 : 1 }
}
