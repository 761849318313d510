import Core
import ControlProtocol
import Packet

/// Everything `/metrics` and `tunnelctl metrics` show, read at one moment from counters the
/// engine, the watchdog and the store writer already keep (the same reads as `tunnelctl status`
/// and `peers`). A value: `MetricsText.render` turns it into the exposition format.
public struct MetricsSnapshot: Sendable, Equatable {
    /// One peer's counters and session.
    public struct Peer: Sendable, Equatable {
        public var name: String
        public var tier: PeerTier
        public var rxBytes: UInt64
        public var txBytes: UInt64
        public var rxPackets: UInt64
        public var txPackets: UInt64
        /// Last completed handshake (epoch ms), nil when never.
        public var lastHandshakeMs: Int64?
        public var session: PeerSessionState
        /// Free tier, connected: milliseconds left in the window (nil otherwise).
        public var remainingMs: Int64?
        /// Handshakes refused since the daemon started.
        public var refusals: UInt64
        /// The limits tunneld enforces on the peer (nil: not resolved yet).
        public var limits: PeerLimits?
        /// Bytes used in the current window, live from the data path's meter (peers with a quota).
        public var quotaUsed: ByteUse?
        /// A peer from its fields.
        public init(name: String, tier: PeerTier, rxBytes: UInt64 = 0, txBytes: UInt64 = 0, rxPackets: UInt64 = 0,
                    txPackets: UInt64 = 0, lastHandshakeMs: Int64? = nil, session: PeerSessionState = .disconnected,
                    remainingMs: Int64? = nil, refusals: UInt64 = 0, limits: PeerLimits? = nil, quotaUsed: ByteUse? = nil)
        {
            self.limits = limits
            self.quotaUsed = quotaUsed
            self.name = name
            self.tier = tier
            self.rxBytes = rxBytes
            self.txBytes = txBytes
            self.rxPackets = rxPackets
            self.txPackets = txPackets
            self.lastHandshakeMs = lastHandshakeMs
            self.session = session
            self.remainingMs = remainingMs
            self.refusals = refusals
        }
    }

    /// The store writer's queue and failures (drops per family are in `status.store`).
    public struct Store: Sendable, Equatable {
        /// Records waiting in the writer's queue.
        public var queueDepth: Int = 0
        /// Write transactions that failed (retried, or their records dropped).
        public var failedBatches: UInt64 = 0
        /// Outages so far (a failure after a success).
        public var outages: UInt64 = 0
        /// Empty counters.
        public init(queueDepth: Int = 0, failedBatches: UInt64 = 0, outages: UInt64 = 0) {
            self.queueDepth = queueDepth
            self.failedBatches = failedBatches
            self.outages = outages
        }
    }

    /// The status reply (build, uptime, peers, flows, drops, store health, policy).
    public var status: StatusReply
    /// Every peer, in registry order.
    public var peers: [Peer]
    /// Every rule in force with its hits (defaults last).
    public var rules: [PolicyRuleStatus]
    /// Flow-table capacity and counters.
    public var flowCapacity: Int
    public var flowStats: FlowTableStats
    /// Store writer queue and failures.
    public var store: Store
    /// Handshakes completed, cookie replies sent, handshake messages waiting.
    public var handshakes: UInt64
    public var cookieReplies: UInt64
    public var handshakeBacklog: Int
    /// Cookies and rate limit are on this second.
    public var underLoad: Bool
    /// Config reloads (SIGHUP, `tunnelctl reload`, `policy reload`) applied, and those refused.
    public var reloads: UInt64
    public var reloadErrors: UInt64

    /// A snapshot from its parts.
    public init(status: StatusReply, peers: [Peer], rules: [PolicyRuleStatus], flowCapacity: Int, flowStats: FlowTableStats,
                store: Store, handshakes: UInt64, cookieReplies: UInt64, handshakeBacklog: Int, underLoad: Bool,
                reloads: UInt64, reloadErrors: UInt64)
    {
        self.status = status
        self.peers = peers
        self.rules = rules
        self.flowCapacity = flowCapacity
        self.flowStats = flowStats
        self.store = store
        self.handshakes = handshakes
        self.cookieReplies = cookieReplies
        self.handshakeBacklog = handshakeBacklog
        self.underLoad = underLoad
        self.reloads = reloads
        self.reloadErrors = reloadErrors
    }
}
