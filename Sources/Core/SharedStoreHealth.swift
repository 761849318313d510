/// How the shared store (`Store = postgresql://…`) is doing, as `tunnelctl status`
/// shows it: the backend, the lag behind it, and what waits for it.
public struct SharedStoreHealth: Hashable, Sendable, Codable {
    /// `postgresql`.
    public var backend: String
    /// This gateway's name in it (`GatewayName`).
    public var gateway: String
    /// The last sync pass that reached it, epoch ms (nil: none yet).
    public var lastSyncAtMs: Int64?
    /// Since when it has been unreachable, epoch ms (nil: it answers).
    public var unavailableSinceMs: Int64?
    /// Its error while unreachable.
    public var error: String?
    /// Changes made here it has not taken yet (windows, tier changes): the journal's depth.
    public var pending: Int
    /// Windows opened here without its answer (reconciled when it is back; earliest wins).
    public var localOpens: UInt64
    /// Windows it answered.
    public var sharedOpens: UInt64
    /// History changes journalled here that it has not taken yet (flows, sessions, refusals,
    /// markers; docs/scale-out.md "History").
    public var journalDepth: Int64
    /// History rows shipped to it since the daemon started.
    public var journalShipped: UInt64
    /// Journalled rows pruned locally before they shipped (an outage longer than the retention).
    public var journalMissing: UInt64
    /// Why the local journal cannot be read, while it cannot.
    public var journalError: String?
    /// Where the retention the daemon prunes with comes from (`PruneSchedule`): `shared` (the
    /// shared store's row), `last-shared` (the store did not answer: the last shared row read,
    /// kept in the local row), `local` (the shared store holds none yet: this gateway's row).
    /// Nil from a daemon that does not say.
    public var retentionFrom: String?
    /// The gateway that stored that retention in the shared store, when known.
    public var retentionSetBy: String?
    /// When it was stored there, epoch ms, when known.
    public var retentionSetAtMs: Int64?

    /// A report.
    public init(backend: String, gateway: String, lastSyncAtMs: Int64?, unavailableSinceMs: Int64?, error: String?,
                pending: Int, localOpens: UInt64, sharedOpens: UInt64, journalDepth: Int64 = 0, journalShipped: UInt64 = 0,
                journalMissing: UInt64 = 0, journalError: String? = nil)
    {
        self.journalDepth = journalDepth
        self.journalShipped = journalShipped
        self.journalMissing = journalMissing
        self.journalError = journalError
        self.backend = backend
        self.gateway = gateway
        self.lastSyncAtMs = lastSyncAtMs
        self.unavailableSinceMs = unavailableSinceMs
        self.error = error
        self.pending = pending
        self.localOpens = localOpens
        self.sharedOpens = sharedOpens
    }
}
