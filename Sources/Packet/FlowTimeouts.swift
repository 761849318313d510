import Core
/// Idle timeouts of flow-table entries by protocol and state, in milliseconds, in the spirit of
/// Linux conntrack (`net/netfilter/nf_conntrack_proto_tcp.c`, `…_udp.c`, `…_icmp.c`). An entry
/// expires when `now - lastSeen >= timeout(for: entry)`.
public struct FlowTimeouts: Sendable, Equatable {
    /// TCP with only the originator's SYN seen (conntrack SYN_SENT is 120 s; a retransmitted
    /// SYN refreshes the entry, so shorter is safe and limits SYN floods).
    public var tcpSynSent: Int64 = 30_000
    /// TCP after the responder's SYN+ACK, before the originator's ACK (conntrack SYN_RECV 60 s).
    public var tcpSynReceived: Int64 = 30_000
    /// TCP picked up mid-stream (first packet not a SYN) and not answered yet.
    public var tcpUnreplied: Int64 = 30_000
    /// TCP established (conntrack: 5 days).
    public var tcpEstablished: Int64 = 5 * 86_400_000
    /// TCP after a FIN in one or both directions (conntrack FIN_WAIT / TIME_WAIT: 120 s).
    public var tcpClosing: Int64 = 120_000
    /// TCP after a RST (conntrack CLOSE: 10 s).
    public var tcpClosed: Int64 = 10_000
    /// UDP before any reply (conntrack: 30 s).
    public var udpUnreplied: Int64 = 30_000
    /// UDP once the other side replied (conntrack "stream" is 120 s; 180 s here, as specified).
    public var udpReplied: Int64 = 180_000
    /// ICMP / ICMPv6 (conntrack: 30 s).
    public var icmp: Int64 = 30_000
    /// Any other protocol (conntrack generic: 600 s).
    public var other: Int64 = 600_000

    /// The defaults above.
    public init() {}

    /// The timeout that applies to `entry` in its current state.
    @inlinable public func timeout(for entry: FlowEntry) -> Int64 {
        switch entry.key.proto.rawValue {
        case 6:
            switch entry.tcp.state {
            case .synSent: return tcpSynSent
            case .synReceived: return tcpSynReceived
            case .unreplied: return tcpUnreplied
            case .established: return tcpEstablished
            case .closing: return tcpClosing
            case .closed: return tcpClosed
            }
        case 17: return entry.packetsReply > 0 ? udpReplied : udpUnreplied
        case 1, 58: return icmp
        default: return other
        }
    }
}
