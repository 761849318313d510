import Core
/// The direction-independent identity of a flow: protocol, two endpoints (address, port) in
/// canonical order (the smaller endpoint first), so a packet and its reply give the same key.
///
/// Ports for ICMP/ICMPv6: echo request and reply use the echo identifier as both ports, so a
/// ping and its replies form one flow (like conntrack's ICMP id). Other ICMP messages use
/// `type << 8 | code` as the source port and 0 as the destination port: each kind is its own
/// little flow. An ICMP error (`ParsedPacket.isICMPError`) belongs to the flow of the packet it
/// quotes: take the `flowKey` of `PacketParser.parseQuoted` on its payload. Other protocols
/// have ports 0.
///
/// Stored as raw words so equality and `hash64` are a handful of integer operations.
public struct FlowKey: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline var aHigh: UInt64
    @usableFromInline var aLow: UInt64
    @usableFromInline var bHigh: UInt64
    @usableFromInline var bLow: UInt64
    /// `aPort << 16 | bPort`.
    @usableFromInline var ports: UInt32
    /// The protocol number.
    public let proto: IPProtocol
    /// True for an IPv6 flow.
    public let isIPv6: Bool

    /// The canonical key of a packet from (`source`, `sourcePort`) to (`destination`,
    /// `destinationPort`). Both addresses must be of one family.
    @inlinable public init(
        proto: IPProtocol, source: IPAddress, sourcePort: UInt16, destination: IPAddress, destinationPort: UInt16
    ) {
        self = FlowKey.oriented(
            proto: proto, source: source, sourcePort: sourcePort, destination: destination,
            destinationPort: destinationPort
        ).key
    }

    /// The canonical key plus the packet's direction relative to it: `reversed` is true when the
    /// packet's source is the key's second endpoint (`endpointB`).
    @inlinable public static func oriented(
        proto: IPProtocol, source: IPAddress, sourcePort: UInt16, destination: IPAddress, destinationPort: UInt16
    ) -> (key: FlowKey, reversed: Bool) {
        let swap =
            (source.high, source.low, sourcePort) > (destination.high, destination.low, destinationPort)
        if swap {
            return (FlowKey(proto, destination, destinationPort, source, sourcePort), true)
        }
        return (FlowKey(proto, source, sourcePort, destination, destinationPort), false)
    }

    @inlinable init(_ proto: IPProtocol, _ a: IPAddress, _ aPort: UInt16, _ b: IPAddress, _ bPort: UInt16) {
        aHigh = a.high
        aLow = a.low
        bHigh = b.high
        bLow = b.low
        ports = UInt32(aPort) << 16 | UInt32(bPort)
        self.proto = proto
        isIPv6 = a.isIPv6
    }

    /// The canonically first endpoint.
    @inlinable public var addressA: IPAddress {
        isIPv6 ? IPAddress(v6High: aHigh, low: aLow) : IPAddress(v4: UInt32(truncatingIfNeeded: aLow))
    }
    /// The canonically second endpoint.
    @inlinable public var addressB: IPAddress {
        isIPv6 ? IPAddress(v6High: bHigh, low: bLow) : IPAddress(v4: UInt32(truncatingIfNeeded: bLow))
    }
    /// Port of `addressA`.
    @inlinable public var portA: UInt16 { UInt16(truncatingIfNeeded: ports >> 16) }
    /// Port of `addressB`.
    @inlinable public var portB: UInt16 { UInt16(truncatingIfNeeded: ports) }

    /// A 64-bit hash of the key: a multiply–xorshift mix of its words (no `Hasher`, no
    /// allocation), unseeded.
    @inlinable public var hash64: UInt64 { hash64(seed: 0) }

    /// The hash under `seed`. A table keyed by addresses that outsiders choose should use a
    /// random seed (as conntrack seeds its jhash) so that nobody can aim many keys at one
    /// bucket; `FlowTable(hashSeed:)` does.
    @inlinable public func hash64(seed: UInt64) -> UInt64 {
        let tail = UInt64(ports) << 16 | UInt64(proto.rawValue) << 8 | (isIPv6 ? 1 : 0)
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ seed
        h = FlowKey.mix(h ^ aHigh)
        h = FlowKey.mix(h ^ aLow)
        h = FlowKey.mix(h ^ bHigh)
        h = FlowKey.mix(h ^ bLow)
        return FlowKey.mix(h ^ tail)
    }

    /// One round of a 64-bit finaliser (the murmur3/splitmix style fmix).
    @inlinable @inline(__always) static func mix(_ x: UInt64) -> UInt64 {
        var z = x &* 0xBF58_476D_1CE4_E5B9
        z ^= z >> 31
        return z &* 0x94D0_49BB_1331_11EB
    }

    @inlinable public static func == (l: FlowKey, r: FlowKey) -> Bool {
        l.aLow == r.aLow && l.bLow == r.bLow && l.ports == r.ports && l.aHigh == r.aHigh && l.bHigh == r.bHigh
            && l.proto == r.proto && l.isIPv6 == r.isIPv6
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hash64) }

    /// `tcp 10.0.0.1:40000 <-> 192.0.2.1:443` (IPv6 addresses in brackets).
    public var description: String {
        func ep(_ a: IPAddress, _ p: UInt16) -> String { a.isIPv6 ? "[\(a)]:\(p)" : "\(a):\(p)" }
        return "\(proto) \(ep(addressA, portA)) <-> \(ep(addressB, portB))"
    }
}

extension FlowKey {
    /// The ports an ICMP (IPv4) or ICMPv6 message gives its flow, as (source, destination): an
    /// echo request or reply (8/0, 128/129) uses its identifier for both, anything else
    /// `type << 8 | code` and 0 (see `FlowKey`). The one definition shared by the flow table
    /// (`ParsedPacket.flowKey`) and the capture reader (`CapturePacketSummary`), so that a flow's
    /// key in the store and the capture index matches its packets in the capture files.
    @inlinable public static func icmpPorts(ipVersion: UInt8, type: UInt8, code: UInt8, identifier: UInt16)
        -> (source: UInt16, destination: UInt16)
    {
        let isEcho = ipVersion == 4 ? (type == 8 || type == 0) : (type == 128 || type == 129)
        return isEcho ? (identifier, identifier) : (UInt16(type) << 8 | UInt16(code), 0)
    }
}

extension ParsedPacket {
    /// The flow key of this packet and its direction relative to the canonical key (see
    /// `FlowKey` for how ICMP fills the ports). A later fragment has ports 0 here; use a
    /// `FragmentTracker` to recover them.
    @inlinable public var flowKey: (key: FlowKey, reversed: Bool) {
        var sp = sourcePort
        var dp = destinationPort
        if proto.rawValue == 1 || proto.rawValue == 58, hasTransportHeader {
            (sp, dp) = FlowKey.icmpPorts(ipVersion: version, type: icmpType, code: icmpCode, identifier: icmpIdentifier)
        }
        return FlowKey.oriented(proto: proto, source: source, sourcePort: sp, destination: destination, destinationPort: dp)
    }
}
