import Core
/// `status`: the daemon at a glance (`tunnelctl status`, docs/control.md). Times are Unix epoch
/// milliseconds (UTC), like the store.
public struct StatusReply: Hashable, Sendable, Codable {
    /// The daemon's process id.
    public var pid: Int32
    /// When the daemon started (epoch ms).
    public var startedAtMs: Int64
    /// Seconds since start, as the daemon measured it (monotonic).
    public var uptimeSeconds: Int64
    /// TunnelVision version string.
    public var version: String
    /// Interface name (`tv0`).
    public var interface: String
    /// UDP listen port.
    public var listenPort: UInt16
    /// Interface addresses (`10.99.0.1/24`).
    public var addresses: [String]
    /// Peers in the config.
    public var peersConfigured: Int
    /// Peers with a live session.
    public var peersConnected: Int
    /// Entries in the flow table.
    public var flowsActive: Int
    /// Dropped packets by reason (`not-allowed-ip`, `policy-block`, `queue-full`, …).
    public var drops: [String: UInt64]
    /// History records lost for good, all families together (queue full, or dropped after a
    /// failed write); kept for tunnelctls that predate `store`.
    public var storeQueueDrops: UInt64
    /// The store writer's health: drops per family, the outage in progress (absent from
    /// daemons that predate it).
    public var store: StoreHealth?
    /// The shared store's health (`Store = postgresql://…`); nil with `Store = local`.
    public var shared: SharedStoreHealth?
    /// The running policy.
    public var policy: PolicySummary
    /// TUN and UDP offloads (absent from daemons that predate them).
    public var offload: OffloadStatus?
    /// Host learning by counter (`pending`, `held-packets`, `pending-timeouts`, `dns-answers`,
    /// `dns-malformed`, …; docs/hosts.md). Absent when no rule matches on `host` and nothing
    /// was counted, and from daemons that predate it.
    public var hosts: [String: UInt64]?
    /// The per-peer status page (`StatusListen`): where it listens, what it answered. Absent
    /// when it is off, and from daemons that predate it.
    public var statusPage: StatusPageCounters?

    /// A status reply from its fields.
    public init(
        pid: Int32, startedAtMs: Int64, uptimeSeconds: Int64, version: String, interface: String, listenPort: UInt16,
        addresses: [String], peersConfigured: Int, peersConnected: Int, flowsActive: Int, drops: [String: UInt64],
        storeQueueDrops: UInt64, policy: PolicySummary, offload: OffloadStatus? = nil, store: StoreHealth? = nil,
        hosts: [String: UInt64]? = nil, statusPage: StatusPageCounters? = nil
    ) {
        self.statusPage = statusPage
        self.hosts = hosts
        self.offload = offload
        self.store = store
        self.pid = pid
        self.startedAtMs = startedAtMs
        self.uptimeSeconds = uptimeSeconds
        self.version = version
        self.interface = interface
        self.listenPort = listenPort
        self.addresses = addresses
        self.peersConfigured = peersConfigured
        self.peersConnected = peersConnected
        self.flowsActive = flowsActive
        self.drops = drops
        self.storeQueueDrops = storeQueueDrops
        self.policy = policy
    }
}
