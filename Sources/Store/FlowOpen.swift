import Core
/// A new flow, as the daemon reports it to `StoreWriter` (inserted into `flows`).
public struct FlowOpen: Sendable {
    /// The daemon's flow id (unique across restarts: seed the counter from `Store.maxFlowId()`).
    public var id: Int64
    /// IP protocol number (6 tcp, 17 udp, 1 icmp, 58 icmpv6).
    public var proto: UInt8
    /// Source address (the peer's side).
    public var src: IPAddress
    /// Source port (0 without ports).
    public var srcPort: UInt16
    /// Destination address.
    public var dst: IPAddress
    /// Destination port (0 without ports).
    public var dstPort: UInt16
    /// The peer's name.
    public var peer: String
    /// Host name learned for the flow (SNI, HTTP Host, DNS), if any yet.
    public var host: String?
    /// First packet time, Unix epoch ms.
    public var at: Int64
    /// The verdict in force.
    public var verdict: Verdict
    /// The deciding rule as `file:line`, nil for the default.
    public var rule: String?
    /// The rest of the decision as it was taken: generation, rule name, reason, tier (nil:
    /// not recorded, e.g. a benchmark's rows).
    public var decision: DecidedRule?
    /// Capture location of the first packet, if captured.
    public var capture: CaptureLocation?

    /// A flow-opened record.
    public init(id: Int64, proto: UInt8, src: IPAddress, srcPort: UInt16, dst: IPAddress, dstPort: UInt16,
                peer: String, host: String? = nil, at: Int64, verdict: Verdict, rule: String? = nil,
                decision: DecidedRule? = nil, capture: CaptureLocation? = nil) {
        self.id = id
        self.proto = proto
        self.src = src
        self.srcPort = srcPort
        self.dst = dst
        self.dstPort = dstPort
        self.peer = peer
        self.host = host
        self.at = at
        self.verdict = verdict
        self.rule = decision.map(\.place) ?? rule
        self.decision = decision
        self.capture = capture
    }
}
