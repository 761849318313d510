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
        case .udpBusy: "udp-busy"
        case .unattributableFragment: "unattributable-fragment"
        case .handshakeBacklogFull: "handshake-backlog-full"
        }
    }
}

/// Lock-free counters of the data path's drops by reason (per-peer bytes are the WireGuard
/// device's, flows opened/evicted are the flow table's `stats`). Threads add with
/// relaxed atomics (a counter is a statistic, not a synchronisation point).
public final class GatewayCounters: @unchecked Sendable {
    // Safe: `drops` points at atomics allocated once in init and freed in deinit; every access
    // goes through the atomics.
    private let drops: UnsafeMutablePointer<Atomic<UInt64>>

    public init() {
        drops = .allocate(capacity: GatewayDrop.allCases.count)
        for i in 0..<GatewayDrop.allCases.count { (drops + i).initialize(to: Atomic(0)) }
    }

    deinit {
        drops.deinitialize(count: GatewayDrop.allCases.count)
        drops.deallocate()
    }

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
