import SystemIO
import Core
import Synchronization

/// Why the gateway's data path dropped a packet (on top of the WireGuard core's own
/// `DropReason`s, which the device counts). `tunnelctl status` shows every non-zero counter.
public enum GatewayDrop: Int, CaseIterable, Sendable, CustomStringConvertible {
    /// A decrypted packet that is not a valid IPv4/IPv6 packet.
    case malformedInner
    /// Cryptokey routing: the inner source is not in the sending peer's AllowedIPs.
    case spoofedSource
    /// A packet read from the TUN device for which no peer's AllowedIPs match the destination.
    case noRoute
    /// A packet read from the TUN device that is not a valid IP packet.
    case malformedOutbound
    /// A flow blocked (silently) by policy.
    case policyBlock
    /// A flow rejected by policy (an RST / ICMP unreachable was sent back).
    case policyReject
    /// The peer had no session and its queue of packets waiting for a handshake was full.
    case handshakeQueueFull
    /// The peer has no known endpoint yet (it never connected and none is configured).
    case noEndpoint
    /// The peer is refused (free-session pause or kick).
    case peerRefused
    /// The TUN device would block; the packet was dropped instead of waiting.
    case tunBusy
    /// The UDP socket would block; the datagram was dropped instead of waiting.
    case udpBusy
    /// A later IP fragment whose first fragment was not seen (so its flow, and verdict, are unknown).
    case unattributableFragment
    /// A handshake message arrived while the handshake thread's queue was full (a flood).
    case handshakeBacklogFull
    /// The peer's window quota is used up (`Quota`, `QuotaUp`, `QuotaDown`); the watchdog ends
    /// the window (reason `quota`) at its next pass, the data path stops forwarding at once.
    case quotaUsed
    /// A packet the peer sent over its `RateUp` while its shaping queue was full (docs/limits.md).
    case rateOverflowUp
    /// A packet to the peer over its `RateDown` while its shaping queue was full.
    case rateOverflowDown
    /// A packet that would open a new flow of a peer at its `MaxFlows` or over its `NewFlowRate`.
    case flowLimit
    /// A packet that would open a new flow while the flow table was full of other peers' live flows.
    case flowTableFull

    public var description: String {
        switch self {
        case .malformedInner: "malformed-inner"
        case .spoofedSource: "spoofed-source"
        case .noRoute: "no-route"
        case .malformedOutbound: "malformed-outbound"
        case .policyBlock: "policy-block"
        case .policyReject: "policy-reject"
        case .handshakeQueueFull: "handshake-queue-full"
        case .noEndpoint: "no-endpoint"
        case .peerRefused: "peer-refused"
        case .tunBusy: "tun-busy"
        case .quotaUsed: "quota-used"
        case .udpBusy: "udp-busy"
        case .unattributableFragment: "unattributable-fragment"
        case .handshakeBacklogFull: "handshake-backlog-full"
        case .rateOverflowUp: "rate-overflow-up"
        case .rateOverflowDown: "rate-overflow-down"
        case .flowLimit: "flow-limit"
        case .flowTableFull: "flow-table-full"
        }
    }
}

/// What host learning did (docs/hosts.md): not drops, but shown beside them in
/// `tunnelctl status` (`hosts`).
public enum HostEvent: Int, CaseIterable, Sendable, CustomStringConvertible {
    /// Flows that waited (pending) for their host name.
    case pending
    /// Packets held while their flow was pending.
    case heldPackets
    /// Pending flows decided without a host because a flow held its most packets.
    case heldOverflow
    /// Flows decided without a host because every pending record was taken.
    case pendingOverflow
    /// Pending flows decided without a host after the pending timeout.
    case timeouts
    /// Pending flows whose payload named no host, or not one that could be read.
    case unreadable
    /// Held packets dropped because their flow ended while pending.
    case discarded
    /// Host names read from a TLS ClientHello, HTTP request or QUIC Initial.
    case learned
    /// UDP/443 flows blocked because their QUIC Initial could not be read (`QUIC = block-unknown`).
    case quicUnknownBlocked
    /// DNS responses to peers whose addresses were learned.
    case dnsAnswers
    /// DNS responses to peers that were malformed or truncated (ignored).
    case dnsMalformed

    public var description: String {
        switch self {
        case .pending: "pending"
        case .heldPackets: "held-packets"
        case .heldOverflow: "held-overflow"
        case .pendingOverflow: "pending-overflow"
        case .timeouts: "pending-timeouts"
        case .unreadable: "unreadable"
        case .discarded: "held-discarded"
        case .learned: "learned"
        case .quicUnknownBlocked: "quic-unknown-blocked"
        case .dnsAnswers: "dns-answers"
        case .dnsMalformed: "dns-malformed"
        }
    }
}

/// Lock-free counters of the data path's drops by reason (per-peer bytes are the WireGuard
/// device's, flows opened/evicted are the flow table's `stats`). Threads add with
/// relaxed atomics (a counter is a statistic, not a synchronisation point).
public final class GatewayCounters: @unchecked Sendable {
    // Safe: `drops` and `hosts` point at atomics allocated once in init and freed in deinit; every access
    // goes through the atomics.
    private let drops: UnsafeMutablePointer<Atomic<UInt64>>
    private let hosts: UnsafeMutablePointer<Atomic<UInt64>>

    public init() {
        drops = .allocate(capacity: GatewayDrop.allCases.count)
        for i in 0..<GatewayDrop.allCases.count { (drops + i).initialize(to: Atomic(0)) }
        hosts = .allocate(capacity: HostEvent.allCases.count)
        for i in 0..<HostEvent.allCases.count { (hosts + i).initialize(to: Atomic(0)) }
    }

    deinit {
        drops.deinitialize(count: GatewayDrop.allCases.count)
        drops.deallocate()
        hosts.deinitialize(count: HostEvent.allCases.count)
        hosts.deallocate()
    }

    @inline(__always) public func host(_ event: HostEvent, _ n: UInt64 = 1) {
        hosts[event.rawValue].add(n, ordering: .relaxed)
    }

    public func count(_ event: HostEvent) -> UInt64 { hosts[event.rawValue].load(ordering: .relaxed) }

    @inline(__always) public func drop(_ reason: GatewayDrop, _ n: UInt64 = 1) {
        drops[reason.rawValue].add(n, ordering: .relaxed)
    }

    public func count(_ reason: GatewayDrop) -> UInt64 { drops[reason.rawValue].load(ordering: .relaxed) }

    /// Handshakes completed (responses sent to initiations we admitted, and our own initiations
    /// answered), counted by the handshake thread.
    public let handshakes = Atomic<UInt64>(0)
    /// Cookie replies sent (under load, an initiation without a valid mac2).
    public let cookieReplies = Atomic<UInt64>(0)
}
