/// A flow a peer must be able to start for a service the gateway offers it inside the tunnel —
/// its status page (`StatusListen`), the resolver its client config names (`ClientDNS`), a ping
/// to the gateway — which the policy could refuse without any other sign than a timeout on the
/// device. The configuration says which flows these are (`TunnelConfig.gatewayProbes`), the
/// policy judges them (`CompiledPolicy.refusals(of:)`): `tunneld --check-config`, tunneld at
/// start and `tunnelctl policy check --config` warn, naming the rule that refuses.
public struct GatewayProbe: Sendable, Hashable {
    /// The service in words: `the status page (StatusListen 10.99.0.1:80)`.
    public var service: String
    /// What the peer sees when it is refused: `the page times out`.
    public var symptom: String
    /// A rule that would allow it, for the warning's hint: `allow proto tcp to gateway port 80`.
    public var allowRule: String
    public var proto: IPProtocol
    public var source: IPAddress
    public var destination: IPAddress
    /// Destination port (0 for ICMP).
    public var port: UInt16
    /// The peer's name; nil for a peer not configured yet (any peer of `tier`).
    public var peer: String?
    public var tier: PeerTier

    public init(service: String, symptom: String, allowRule: String, proto: IPProtocol, source: IPAddress,
                destination: IPAddress, port: UInt16, peer: String?, tier: PeerTier) {
        self.service = service
        self.symptom = symptom
        self.allowRule = allowRule
        self.proto = proto
        self.source = source
        self.destination = destination
        self.port = port
        self.peer = peer
        self.tier = tier
    }
}
